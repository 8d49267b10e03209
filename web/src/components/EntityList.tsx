import { EntityLink } from "./EntityLink";
import { Panel } from "./Panel";

export interface Summary {
  id?: string;
  ref: string;
  kind?: string;
  name: string;
  title?: string | null;
  description?: string | null;
}

interface Props {
  id: string;
  heading: string;
  items: Summary[] | null | undefined;
  empty: string;
  showKind?: boolean;
}

export function EntityList({ id, heading, items, empty, showKind }: Props) {
  return (
    <Panel id={id} heading={heading}>
      {items && items.length ? (
        <ul className="atrium-list">
          {items.map((e) => (
            <li key={e.ref}>
              <EntityLink entity={e} />
              {showKind && e.kind ? <span className="atrium-muted"> {e.kind}</span> : null}
              {!showKind && e.description ? (
                <span className="atrium-muted"> {e.description}</span>
              ) : null}
            </li>
          ))}
        </ul>
      ) : (
        <p className="atrium-muted">{empty}</p>
      )}
    </Panel>
  );
}
