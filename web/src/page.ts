// What the server put in the page: the answers it rendered from, and who is asking.
export interface DemoUser {
  ref: string;
  name: string;
  displayName: string;
}

export interface PageData {
  mode: "development" | "production";
  // known: whether the directory knows the viewer (someone it lacks may read, not change);
  // mayStar: whether they may star entities (a person who may write).
  viewer: {
    ref: string | null;
    via: string;
    name: string | null;
    picture: string | null;
    known?: boolean;
    mayStar?: boolean;
  };
  // Whether people sign in with the identity provider: the header offers it.
  signIn?: boolean;
  demoUsers?: DemoUser[];
  // The panel operations the server offers (plugins register them only when they can answer,
  // e.g. when their backend is configured); missing on a page the server did not render.
  panels?: string[];
  // Plugins' console modules (builder.console), each with the pages it has panels on.
  plugins?: { plugin: string; module: string; pages: string[] }[];
  // The files of the chunks the page's client needs, for its entry to fetch at once.
  chunks?: string[];
  // Why an embedded answer lacks some of its fields (a backend unavailable), by operation.
  unavailable?: Record<string, string>;
}

export interface Embedded {
  operationName: string;
  variables: Record<string, unknown>;
  data: Record<string, unknown>;
}

function json<T>(id: string, fallback: T): T {
  const element = document.getElementById(id);
  if (!element?.textContent) return fallback;
  try {
    return JSON.parse(element.textContent) as T;
  } catch {
    return fallback;
  }
}

export const page: PageData = json<PageData>("atrium-page", {
  mode: "development",
  viewer: { ref: null, via: "anonymous", name: null, picture: null },
});

export const embedded: Embedded[] = json<Embedded[]>("apollo-results", []);
