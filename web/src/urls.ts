// Backstage's URLs, which people's links already use.
export function splitRef(ref: string): { kind: string; namespace: string; name: string } {
  const [kind, rest = ""] = ref.split(":", 2);
  const slash = rest.indexOf("/");
  return slash < 0
    ? { kind, namespace: "default", name: rest }
    : { kind, namespace: rest.slice(0, slash), name: rest.slice(slash + 1) };
}

export function entityUrl(ref: string): string {
  const { kind, namespace, name } = splitRef(ref);
  return `/catalog/${[namespace, kind, name].map(encodeURIComponent).join("/")}`;
}

export function workloadUrl(w: { cluster: string; namespace: string; name: string }): string {
  return `/workloads/${[w.cluster, w.namespace, w.name].map(encodeURIComponent).join("/")}`;
}

// The ref a page's operations are asked with: exactly what the server asks with.
export function pageRef(kind: string, namespace: string, name: string): string {
  return `${kind}:${namespace}/${name}`.toLowerCase();
}
