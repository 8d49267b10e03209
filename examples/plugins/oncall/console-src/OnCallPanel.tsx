// The "On call" section of a component's page: its owner's rotation now (primary, secondary,
// until when, the escalation policy) and, for its owners, taking over on call until the
// shift's end, confirmed first. The server renders the same markup from
// ../atrium_oncall/templates/oncall_panel.html, so React hydrates it in place.
import {
  ActionOutcome,
  ActionStatus,
  Card,
  ConfirmAction,
  Empty,
  Loading,
  Notice,
  Para,
  Person,
  Section,
  Small,
  useMutationOf,
  useOperation,
  type PanelProps,
} from "@atrium/console";
import type { EntityOnCallData, OnCall, Someone } from "./types";
import { when } from "./words";

export function OnCallPanel({ pageRef }: PanelProps) {
  return (
    <ActionStatus>
      <OnCallSection pageRef={pageRef} />
    </ActionStatus>
  );
}

function OnCallSection({ pageRef }: PanelProps) {
  const { data, error, loading } = useOperation<EntityOnCallData>("EntityOnCall", { ref: pageRef });
  if (!data) {
    return (
      <Section id="oncall" title="On call">
        {error ? <Notice tone="error" text={`Could not load who is on call: ${error.message}`} /> : loading ? <Loading /> : null}
      </Section>
    );
  }
  const component = data.entity;
  if (!component) return null;
  const onCall = component.onCall;
  const me = data.viewer?.ref ?? null;
  const mayTakeOver = !!onCall && onCall.viewerCanOverride && !!me && me !== onCall.primaryRef;
  return (
    <Section
      id="oncall"
      title="On call"
      actions={mayTakeOver && onCall && me ? <TakeOver component={pageRef} onCall={onCall} me={me} /> : undefined}
    >
      {onCall ? (
        <div className="atrium-cards">
          <Card title="Primary">
            <Who someone={onCall.primary} fallback={onCall.primaryRef} />
            <Small>
              {onCall.override
                ? `Override until ${when(onCall.until)}${onCall.override.reason ? `: ${onCall.override.reason}` : ""}`
                : `Until ${when(onCall.until)}`}
            </Small>
          </Card>
          <Card title="Secondary">
            <Who someone={onCall.secondary} fallback={onCall.secondaryRef ?? "Nobody"} subtle={!onCall.secondaryRef} />
            <Small>{`Rotation: ${onCall.rotation}`}</Small>
          </Card>
          <Card title="Escalation policy">
            <Para>{onCall.escalationPolicy}</Para>
          </Card>
        </div>
      ) : (
        <Empty text="No rotation covers this component's owner." />
      )}
      <ActionOutcome />
    </Section>
  );
}

function Who({ someone, fallback, subtle }: { someone: Someone | null; fallback: string; subtle?: boolean }) {
  return someone ? <Person entity={someone} /> : <Para tone={subtle ? "subtle" : "default"}>{fallback}</Para>;
}

// The viewer takes over from the primary until the shift's end: confirmed, then audited.
function TakeOver({ component, onCall, me }: { component: string; onCall: OnCall; me: string }) {
  const [override] = useMutationOf("OverrideOnCall");
  const until = when(onCall.until);
  const from = onCall.primary?.profile?.displayName ?? onCall.primary?.title ?? onCall.primaryRef;
  return (
    <ConfirmAction
      label="Take over on call…"
      title="Take over on call?"
      confirm="Take over"
      pending="Taking over…"
      run={async () => {
        await override({
          variables: { component, primary: me, until: onCall.until, reason: "Taken over from the console" },
        });
        return { ok: true, text: `You are on call for this component until ${until}.` };
      }}
    >
      <Para>{`You are paged first for this component instead of ${from}, until ${until}. The change is audited.`}</Para>
    </ConfirmAction>
  );
}
