// The JSX runtime a plugin's console module imports ("react/jsx-runtime"): the console's.
export { Fragment, jsx, jsxs } from "react/jsx-runtime";
