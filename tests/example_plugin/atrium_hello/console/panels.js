import { Card, Para, Section, Small, useOperation } from "@atrium/console";
import { jsx, jsxs } from "react/jsx-runtime";
// tests/example_plugin/atrium_hello/console/HelloPanel.graphql?raw
var HelloPanel_default = "query HelloPanel($ref: String!) {\n  entity(ref: $ref) {\n    id\n    kind\n  }\n  greeting(ref: $ref)\n}\n";
// tests/example_plugin/console-src/panels.tsx
function Hello({ pageRef }) {
	const { data } = useOperation("HelloPanel", { ref: pageRef });
	if (!data?.entity) return null;
	return /* @__PURE__ */ jsx(Section, {
		id: "hello",
		title: "Hello",
		children: /* @__PURE__ */ jsxs(Card, {
			title: "Greeting",
			children: [/* @__PURE__ */ jsx(Para, { children: data.greeting }), /* @__PURE__ */ jsx(Small, { children: `From the hello plugin's own package, for this ${data.entity.kind}.` })]
		})
	});
}
var operations = { HelloPanel: HelloPanel_default };
var panels = [{
	page: "entity",
	kinds: ["component"],
	requires: "HelloPanel",
	section: ["hello", "Hello"],
	component: Hello
}];
export { operations, panels };
