import { useApolloClient } from "@apollo/client/react";
import { Link } from "react-router";
import { document } from "../documents";
import { routes } from "../routes";
import { entityUrl, pageRef, splitRef } from "../urls";

interface Props {
  entity: { ref: string; name: string; title?: string | null };
  label?: string;
}

// A link to an entity's page that fetches what that page needs as soon as a person points
// at it (hover or focus): its route chunk and its page query, into the cache.
export function EntityLink({ entity, label }: Props) {
  const client = useApolloClient();
  const { kind, namespace, name } = splitRef(entity.ref);
  const team = kind.toLowerCase() === "group";
  const prefetch = () => {
    (team ? routes.team : routes.entity).preload().catch(() => undefined);
    client
      .query({
        query: document(team ? "TeamPage" : "EntityPage"),
        variables: { ref: pageRef(kind, namespace, name) },
      })
      .catch(() => undefined);
  };
  return (
    <Link to={entityUrl(entity.ref)} onMouseEnter={prefetch} onFocus={prefetch}>
      {label ?? (entity.title || entity.name)}
    </Link>
  );
}
