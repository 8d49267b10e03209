/* eslint-disable @typescript-eslint/no-explicit-any */
import { useApolloClient, useMutation, useQuery } from "@apollo/client/react";
import { document } from "../../documents";
import { IconButton } from "../../kit";
import { page } from "../../page";

// Star an entity to find it on home and in the catalog's "starred"; for those who may (people
// the directory knows, and tokens acting as one with the write scope: the server says so, and
// writes the same button from the same answer).
export function StarButton({ entityRef }: { entityRef: string }) {
  const signedIn = page.viewer.mayStar === true;
  const client = useApolloClient();
  const { data } = useQuery<any>(document("EntityViewer"), { variables: { ref: entityRef }, skip: !signedIn });
  const [star] = useMutation<any>(document("StarEntity"));
  const [unstar] = useMutation<any>(document("UnstarEntity"));
  if (!signedIn) return null;
  const entity = data?.entity;
  const starred = Boolean(entity?.viewerStarred);
  return (
    <IconButton
      icon={starred ? "star" : "star-outline"}
      label={starred ? "Unstar" : "Star"}
      selected={starred}
      onClick={() => {
        const run = starred ? unstar : star;
        const field = starred ? "unstarEntity" : "starEntity";
        void run({
          variables: { ref: entityRef },
          optimisticResponse: entity ? { [field]: { ...entity, viewerStarred: !starred } } : undefined,
        })
          .then(() => {
            // Home's list and the catalog's "starred" change with it: fresh answers, past the
            // browser's cache of the earlier ones too.
            for (const name of ["HomePage", "CatalogViewer"]) {
              void client
                .query({ query: document(name), fetchPolicy: "network-only", context: { fetchOptions: { cache: "no-cache" } } })
                .catch(() => undefined);
            }
          })
          .catch(() => undefined);
      }}
    />
  );
}
