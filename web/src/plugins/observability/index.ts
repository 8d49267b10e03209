// The observability plugin's cache policies: series, alerts and bounds belong to what holds
// them and are replaced whole.
import type { TypePolicies } from "@apollo/client";

export const typePolicies: TypePolicies = {
  MetricSeries: { keyFields: false },
  Alert: { keyFields: false },
  ResourceBounds: { keyFields: false },
  WorkloadLogs: { keyFields: false },
  LogLine: { keyFields: false },
};
