/* eslint-disable @typescript-eslint/no-explicit-any */
import { Badge, Clamp, Small, Span, Td } from "../kit";
import { kindLabel, lifecycleTone } from "../present";
import { EntityLink } from "./EntityLink";

// The cells a table of entities shares (ssr/templates/_macros.html: name_cell, kind_cell,
// lifecycle_cell): its name and description, its kind and type, its lifecycle.
export function NameCell({ entity }: { entity: any }) {
  return (
    <Td>
      <div className="atrium-cell">
        <EntityLink entity={entity} strong />
        {entity.description ? <Clamp text={entity.description} /> : null}
      </div>
    </Td>
  );
}

export function KindCell({ entity }: { entity: any }) {
  return (
    <Td>
      <div className="atrium-cell">
        <Span>{kindLabel(entity.kind)}</Span>
        {entity.type ? <Small>{entity.type}</Small> : null}
      </div>
    </Td>
  );
}

export function LifecycleCell({ entity }: { entity: any }) {
  return <Td>{entity.lifecycle ? <Badge text={entity.lifecycle} type={lifecycleTone(entity.lifecycle)} /> : null}</Td>;
}
