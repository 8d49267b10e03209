// Backstage's catalog, as its backend judges one entity, run over JSON documents.
// Usage: node catalog_model.mjs < documents.json   (a JSON list of documents)
// Prints a JSON list, one verdict per document, in order:
//   {accepted, errors, relations, layered: {accepted, errors}}
// `errors` is the error Backstage records, outermost first (each cause after its wrapper);
// `relations` are the [type, targetRef] pairs the entity declares, as the catalog stores them;
// `layered` is the verdict with the opt-in `mcp-server` model layer on.
//
// The steps are the catalog backend's, in its order: YAML's root must be a mapping
// (parseEntityYaml); the envelope is checked and the location annotations added as the
// processor output collector does; then the orchestrator checks the envelope again, enforces
// the default policies (SchemaValid, DefaultNamespace, NoForeignRootFields, FieldFormat),
// validates the entity and its kind (BuiltinKindsEntityProcessor's validators, the first that
// recognises the kind decides) and emits relations from the spec's ref fields
// (postProcessEntity: parseEntityRef with each field's default kind and the entity's
// namespace). Placeholders are the caller's: documents arrive with them substituted.
import { createRequire } from "node:module";

// The package's ES modules import lodash paths Node cannot resolve: load its CommonJS build.
const require = createRequire(import.meta.url);
const model = require("@backstage/catalog-model");
const alpha = require("@backstage/catalog-model/alpha");

const policy = model.EntityPolicies.allOf([
  new model.SchemaValidEntityPolicy(),
  new model.DefaultNamespaceEntityPolicy(),
  new model.NoForeignRootFieldsEntityPolicy(),
  new model.FieldFormatEntityPolicy(model.makeValidator()),
]);
const validateEnvelope = model.entityEnvelopeSchemaValidator();
const validateEntity = model.entitySchemaValidator();
const kindValidators = [
  model.apiEntityV1alpha1Validator,
  model.componentEntityV1alpha1Validator,
  model.resourceEntityV1alpha1Validator,
  model.groupEntityV1alpha1Validator,
  model.locationEntityV1alpha1Validator,
  model.userEntityV1alpha1Validator,
  model.systemEntityV1alpha1Validator,
  model.domainEntityV1alpha1Validator,
];

// Which spec fields declare which relations, with their default kinds, and each relation's
// reverse: from Backstage's own model of its kinds.
const catalogModel = alpha.compileCatalogModel([alpha.defaultCatalogEntityModel]);
const reverseOf = new Map(
  catalogModel.listRelations().flatMap((relation) => [
    [relation.forward.type, relation.reverse.type],
    [relation.reverse.type, relation.forward.type],
  ]),
);
function relationFields(kind) {
  const found = catalogModel.getKind({ apiVersion: "backstage.io/v1alpha1", kind });
  return found ? found.relationFields : [];
}

class Refused extends Error {
  constructor(message, cause) {
    super(message);
    this.chain = [message, ...(cause ? causes(cause) : [])];
  }
}

function causes(error) {
  return error instanceof Refused ? error.chain : [String(error?.message ?? error)];
}

function isPlainObject(value) {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function step(message, run) {
  try {
    return run();
  } catch (error) {
    throw new Refused(message, error);
  }
}

async function asyncStep(message, run) {
  try {
    return await run();
  } catch (error) {
    throw new Refused(message, error);
  }
}

function collected(document) {
  if (!isPlainObject(document)) {
    throw new Refused(`Expected object at root, got ${typeof document}`);
  }
  // The collector records the envelope's error as it is.
  let entity = validateEnvelope(document);
  const annotations = entity.metadata.annotations || {};
  if (typeof annotations === "object" && !Array.isArray(annotations)) {
    entity = {
      ...entity,
      metadata: {
        ...entity.metadata,
        annotations: {
          ...annotations,
          "backstage.io/managed-by-origin-location": "url:https://example.com/catalog-info.yaml",
          "backstage.io/managed-by-location": "url:https://example.com/catalog-info.yaml",
        },
      },
    };
  }
  return entity;
}

async function processed(unprocessed, layered) {
  step("Entity envelope failed validation before processing", () =>
    validateEnvelope(unprocessed),
  );
  const ref = model.stringifyEntityRef(unprocessed);
  const entity = await asyncStep(`Policy check failed for ${ref}`, () =>
    policy.enforce(unprocessed),
  );
  step(`Entity envelope for ${ref} failed validation after preprocessing`, () =>
    validateEntity(entity),
  );
  const validators =
    layered && entity.kind === "API" && entity.spec?.type === "mcp-server"
      ? [alpha.mcpServerApiEntityValidator, ...kindValidators.slice(1)]
      : kindValidators;
  let valid = false;
  for (const validator of validators) {
    const recognised = await asyncStep(
      `Processor BuiltinKindsEntityProcessor threw an error while validating the entity ${ref}`,
      () => validator.check(entity),
    );
    if (recognised) {
      valid = true;
      break;
    }
  }
  if (!valid) {
    throw new Refused(
      `No processor recognized the entity ${ref} as valid, possibly caused by a foreign kind or apiVersion`,
    );
  }
  return step("Processor BuiltinKindsEntityProcessor threw an error while postprocessing", () =>
    relationsOf(entity),
  );
}

function relationsOf(entity) {
  const self = model.getCompoundEntityRef(entity);
  const relations = [];
  for (const field of relationFields(entity.kind)) {
    const targets = field.path.split(".").reduce((value, key) => value?.[key], entity);
    if (!targets) {
      continue;
    }
    for (const target of [targets].flat()) {
      const parsed = model.parseEntityRef(target, {
        defaultKind: field.defaultKind,
        defaultNamespace: self.namespace,
      });
      relations.push([field.relation, model.stringifyEntityRef(parsed)]);
      if (!reverseOf.has(field.relation)) {
        throw new Error(`no reverse for ${field.relation}`);
      }
    }
  }
  return relations;
}

async function judge(document, layered) {
  try {
    const relations = await processed(collected(document), layered);
    return { accepted: true, errors: [], relations };
  } catch (error) {
    return { accepted: false, errors: causes(error), relations: [] };
  }
}

let input = "";
for await (const chunk of process.stdin) {
  input += chunk;
}
const verdicts = [];
for (const document of JSON.parse(input)) {
  const verdict = await judge(document, false);
  const layered = await judge(document, true);
  verdicts.push({ ...verdict, layered: { accepted: layered.accepted, errors: layered.errors } });
}
process.stdout.write(JSON.stringify(verdicts));
