import { Para } from "../../kit";

// An API's definition, rendered when its section comes into view.
export function ApiDefinition({ entityRef, type }: { entityRef: string; type: string | null }) {
  void entityRef;
  return (
    <div className="atrium-definition">
      <Para tone="subtle">{`The definition (${type || "text"}) shows here.`}</Para>
    </div>
  );
}
