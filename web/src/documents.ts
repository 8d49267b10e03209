// Every operation of the console, by name: the .graphql files of operations/, of the routes'
// folders (each beside the component that reads it) and of each plugin's folder, which the
// build also turns into the persisted-query manifest (the server trusts exactly these).
import { gql, type TypedDocumentNode } from "@apollo/client";

const sources = import.meta.glob<string>(["./operations/*.graphql", "./routes/**/*.graphql", "./plugins/*/*.graphql"], {
  query: "?raw",
  import: "default",
  eager: true,
});

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Document = TypedDocumentNode<any, any>;

export const documents: Record<string, Document> = {};
for (const [path, text] of Object.entries(sources)) {
  const name = path.replace(/^.*\/(\w+)\.graphql$/, "$1");
  documents[name] = gql(text);
}

// A plugin module's operations (its console folder's .graphql files, by name), which the server
// trusts from the same files; a name the console already has stays the console's.
export function registerDocuments(texts: Record<string, string>) {
  for (const [name, text] of Object.entries(texts)) documents[name] ??= gql(text);
}

export function document(name: string): Document {
  const found = documents[name];
  if (!found) throw new Error(`no operation ${name} in the console`);
  return found;
}
