// Every action that changes production goes through here: a button opens a dialog that says
// what changes (from what, to what) and asks to confirm; while the action runs the button says
// so; then the outcome shows in the page's one status line, and any earlier outcome is gone.
import { Layer, ModalAlert } from "gestalt";
import { createContext, type ReactNode, useContext, useState } from "react";
import { Button } from "../kit";
import { Notice } from "./Section";

export interface Outcome {
  ok: boolean;
  text: string;
  // A message that follows something still going on (a deploy in flight): shown as it is now.
  follow?: () => string | null;
}

interface Status {
  outcome: Outcome | null;
  report: (outcome: Outcome | null) => void;
}

const StatusContext = createContext<Status>({ outcome: null, report: () => undefined });

// The page's status line for actions: one outcome at a time, the newest.
export function ActionStatus({ children }: { children: ReactNode }) {
  const [outcome, report] = useState<Outcome | null>(null);
  return <StatusContext.Provider value={{ outcome, report }}>{children}</StatusContext.Provider>;
}

export function ActionOutcome() {
  const { outcome } = useContext(StatusContext);
  if (!outcome) return null;
  const text = outcome.follow?.() ?? outcome.text;
  return <Notice tone={outcome.ok ? "success" : "error"} text={text} />;
}

interface Props {
  // The button that opens the dialog, and the dialog's question.
  label: string;
  title: string;
  // What changes, in words (and any fields the dialog needs).
  children: ReactNode;
  confirm: string;
  pending: string;
  // Runs the action; resolves to what to report, or throws a refusal.
  run: () => Promise<Outcome>;
  // A dialog whose fields are not a valid change yet cannot be confirmed.
  ready?: boolean;
  onOpen?: () => void;
}

export function ConfirmAction({ label, title, children, confirm, pending, run, ready = true, onOpen }: Props) {
  const { report } = useContext(StatusContext);
  const [open, setOpen] = useState(false);
  const [busy, setBusy] = useState(false);
  const act = async () => {
    setOpen(false);
    setBusy(true);
    report(null);
    try {
      report(await run());
    } catch (error) {
      report({ ok: false, text: `${title.replace(/\?$/, "")}: refused. ${(error as Error).message}` });
    } finally {
      setBusy(false);
    }
  };
  return (
    <>
      <Button
        text={busy ? pending : label}
        disabled={busy}
        onClick={() => {
          onOpen?.();
          setOpen(true);
        }}
      />
      {open ? (
        <Layer>
          <ModalAlert
            type="warning"
            accessibilityModalLabel={title}
            heading={title}
            onDismiss={() => setOpen(false)}
            primaryAction={{
              accessibilityLabel: confirm,
              label: confirm,
              onClick: () => {
                if (ready) void act();
              },
              role: "button",
              disabled: !ready,
            }}
            secondaryAction={{
              accessibilityLabel: "Cancel",
              label: "Cancel",
              onClick: () => setOpen(false),
              role: "button",
            }}
          >
            {children}
          </ModalAlert>
        </Layer>
      ) : null}
    </>
  );
}
