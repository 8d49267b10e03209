// The deployments plugin's cache policies: deploys and releases are keyed by id (the default);
// a pipeline and DORA figures belong to their component and are replaced whole.
import type { TypePolicies } from "@apollo/client";

export const typePolicies: TypePolicies = {
  Pipeline: { keyFields: false },
  PipelineStage: { keyFields: false },
  StageWorkload: { keyFields: false },
  Dora: { keyFields: false },
  DeployConnection: { keyFields: false },
  DeployEdge: { keyFields: false },
};
