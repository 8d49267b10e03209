// Gestalt's whole stylesheet, loaded after the first render: the page's inline CSS holds what
// the kit renders at load (kit/css.ts); dialogs, menus and toasts need the rest.
import "gestalt/dist/gestalt.css";
