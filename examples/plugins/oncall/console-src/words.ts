// How the on-call panel words things, as the server's template does
// (../atrium_oncall/templates/_words.html).

// "2026-11-24T09:00:00+00:00" → "2026-11-24 09:00 UTC".
export function when(iso: string | null | undefined): string {
  return iso ? `${iso.slice(0, 16).replace("T", " ")} UTC` : "";
}
