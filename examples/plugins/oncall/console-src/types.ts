// The answers of the plugin's operations (../atrium_oncall/console/*.graphql), as the panel reads them.
export interface Someone {
  id: string;
  ref: string;
  name: string;
  title?: string | null;
  profile?: { displayName?: string | null; picture?: string | null } | null;
}

export interface OnCall {
  id: string;
  rotation: string;
  teamRef: string;
  primaryRef: string;
  primary: Someone | null;
  secondaryRef: string | null;
  secondary: Someone | null;
  until: string;
  escalationPolicy: string;
  override: { by: string; reason: string | null; until: string } | null;
  viewerCanOverride: boolean;
}

export interface EntityOnCallData {
  viewer: { ref: string | null } | null;
  entity: { id: string; onCall?: OnCall | null } | null;
}
