import { ActionOutcome, ActionStatus, Card, ConfirmAction, Empty, Loading, Notice, Para, Person, Section, Small, useMutationOf, useOperation } from "@atrium/console";
import { jsx, jsxs } from "react/jsx-runtime";
// atrium_oncall/console/EntityOnCall.graphql?raw
var EntityOnCall_default = "# Who is on call for a component now: the entity page's \"On call\" panel (panels.tsx and\n# templates/oncall_panel.html). Dropped from caches by an override (change key oncall:<ref>).\nquery EntityOnCall($ref: String!) {\n  viewer {\n    ref\n  }\n  entity(ref: $ref) {\n    id\n    ... on Component {\n      onCall {\n        id\n        rotation\n        teamRef\n        primaryRef\n        primary {\n          id\n          ref\n          name\n          title\n          profile {\n            displayName\n            picture\n          }\n        }\n        secondaryRef\n        secondary {\n          id\n          ref\n          name\n          title\n          profile {\n            displayName\n            picture\n          }\n        }\n        until\n        escalationPolicy\n        override {\n          by\n          reason\n          until\n        }\n        viewerCanOverride\n      }\n    }\n  }\n}\n";
// atrium_oncall/console/OverrideOnCall.graphql?raw
var OverrideOnCall_default = "# Take over on call for a component (the panel's confirm-then-act button): the answer has the\n# panel's fields, so the console's cache shows the change at once.\nmutation OverrideOnCall($component: String!, $primary: String!, $until: DateTime!, $reason: String) {\n  overrideOnCall(component: $component, primary: $primary, until: $until, reason: $reason) {\n    id\n    rotation\n    teamRef\n    primaryRef\n    primary {\n      id\n      ref\n      name\n      title\n      profile {\n        displayName\n        picture\n      }\n    }\n    secondaryRef\n    secondary {\n      id\n      ref\n      name\n      title\n      profile {\n        displayName\n        picture\n      }\n    }\n    until\n    escalationPolicy\n    override {\n      by\n      reason\n      until\n    }\n    viewerCanOverride\n  }\n}\n";
// console-src/words.ts
function when(iso) {
	return iso ? `${iso.slice(0, 16).replace("T", " ")} UTC` : "";
}
// console-src/OnCallPanel.tsx
function OnCallPanel({ pageRef }) {
	return /* @__PURE__ */ jsx(ActionStatus, { children: /* @__PURE__ */ jsx(OnCallSection, { pageRef }) });
}
function OnCallSection({ pageRef }) {
	const { data, error, loading } = useOperation("EntityOnCall", { ref: pageRef });
	if (!data) return /* @__PURE__ */ jsx(Section, {
		id: "oncall",
		title: "On call",
		children: error ? /* @__PURE__ */ jsx(Notice, {
			tone: "error",
			text: `Could not load who is on call: ${error.message}`
		}) : loading ? /* @__PURE__ */ jsx(Loading, {}) : null
	});
	const component = data.entity;
	if (!component) return null;
	const onCall = component.onCall;
	const me = data.viewer?.ref ?? null;
	const mayTakeOver = !!onCall && onCall.viewerCanOverride && !!me && me !== onCall.primaryRef;
	return /* @__PURE__ */ jsxs(Section, {
		id: "oncall",
		title: "On call",
		actions: mayTakeOver && onCall && me ? /* @__PURE__ */ jsx(TakeOver, {
			component: pageRef,
			onCall,
			me
		}) : void 0,
		children: [onCall ? /* @__PURE__ */ jsxs("div", {
			className: "atrium-cards",
			children: [
				/* @__PURE__ */ jsxs(Card, {
					title: "Primary",
					children: [/* @__PURE__ */ jsx(Who, {
						someone: onCall.primary,
						fallback: onCall.primaryRef
					}), /* @__PURE__ */ jsx(Small, { children: onCall.override ? `Override until ${when(onCall.until)}${onCall.override.reason ? `: ${onCall.override.reason}` : ""}` : `Until ${when(onCall.until)}` })]
				}),
				/* @__PURE__ */ jsxs(Card, {
					title: "Secondary",
					children: [/* @__PURE__ */ jsx(Who, {
						someone: onCall.secondary,
						fallback: onCall.secondaryRef ?? "Nobody",
						subtle: !onCall.secondaryRef
					}), /* @__PURE__ */ jsx(Small, { children: `Rotation: ${onCall.rotation}` })]
				}),
				/* @__PURE__ */ jsx(Card, {
					title: "Escalation policy",
					children: /* @__PURE__ */ jsx(Para, { children: onCall.escalationPolicy })
				})
			]
		}) : /* @__PURE__ */ jsx(Empty, { text: "No rotation covers this component's owner." }), /* @__PURE__ */ jsx(ActionOutcome, {})]
	});
}
function Who({ someone, fallback, subtle }) {
	return someone ? /* @__PURE__ */ jsx(Person, { entity: someone }) : /* @__PURE__ */ jsx(Para, {
		tone: subtle ? "subtle" : "default",
		children: fallback
	});
}
function TakeOver({ component, onCall, me }) {
	const [override] = useMutationOf("OverrideOnCall");
	const until = when(onCall.until);
	const from = onCall.primary?.profile?.displayName ?? onCall.primary?.title ?? onCall.primaryRef;
	return /* @__PURE__ */ jsx(ConfirmAction, {
		label: "Take over on call…",
		title: "Take over on call?",
		confirm: "Take over",
		pending: "Taking over…",
		run: async () => {
			await override({ variables: {
				component,
				primary: me,
				until: onCall.until,
				reason: "Taken over from the console"
			} });
			return {
				ok: true,
				text: `You are on call for this component until ${until}.`
			};
		},
		children: /* @__PURE__ */ jsx(Para, { children: `You are paged first for this component instead of ${from}, until ${until}. The change is audited.` })
	});
}
// console-src/panels.tsx
var operations = {
	EntityOnCall: EntityOnCall_default,
	OverrideOnCall: OverrideOnCall_default
};
var panels = [{
	page: "entity",
	kinds: ["component"],
	requires: "EntityOnCall",
	section: ["oncall", "On call"],
	component: OnCallPanel
}];
export { operations, panels };
