import { useApolloClient } from "@apollo/client/react";
import { document } from "../documents";
import { AppLink, Avatar, Clamp, Para } from "../kit";
import { displayName, entityUrl, picture, splitRef } from "../present";
import { routes } from "../routes";

interface Summary {
  ref: string;
  name: string;
  title?: string | null;
  description?: string | null;
  profile?: { displayName?: string | null; picture?: string | null } | null;
}

// A link to an entity's page that fetches what that page needs as soon as a person points at
// it (hover or focus): its route chunk and its page query, into the cache (the entity_link
// macro).
export function EntityLink({ entity, strong, label }: { entity: Summary; strong?: boolean; label?: string }) {
  const prefetch = usePrefetch(entity.ref);
  return (
    <AppLink href={entityUrl(entity)} strong={strong} onPoint={prefetch}>
      {label ?? displayName(entity)}
    </AppLink>
  );
}

export function usePrefetch(ref: string) {
  const client = useApolloClient();
  return () => {
    const [kind, namespace, name] = splitRef(ref);
    const team = kind.toLowerCase() === "group";
    (team ? routes.team : routes.entity).preload().catch(() => undefined);
    client
      .query({
        query: document(team ? "TeamPage" : "EntityPage"),
        variables: { ref: `${kind}:${namespace}/${name}`.toLowerCase() },
      })
      .catch(() => undefined);
  };
}

// A person or a team: avatar and name, linked to their page (the person macro).
export function Person({ entity }: { entity: Summary }) {
  const prefetch = usePrefetch(entity.ref);
  const name = displayName(entity);
  return (
    <span className="atrium-person">
      <Avatar name={name} src={picture(entity)} />
      <AppLink href={entityUrl(entity)} onPoint={prefetch}>
        {name}
      </AppLink>
    </span>
  );
}

// Entities as a list: name and description (the entity_list macro).
export function EntityList({ items, empty }: { items: Summary[] | null | undefined; empty: string }) {
  return items && items.length ? (
    <ul className="atrium-list">
      {items.map((e) => (
        <li key={e.ref}>
          <div className="atrium-cell">
            <EntityLink entity={e} strong />
            {e.description ? <Clamp text={e.description} /> : null}
          </div>
        </li>
      ))}
    </ul>
  ) : (
    <Para tone="subtle">{empty}</Para>
  );
}
