// @internal: what the repository's own in-cluster worker (apps/worker) shares with createWorker.
// Not part of the published package (its build bundles src/index.ts only).
export { collectDefinitions, type Definitions, queuesOf } from "./worker/definitions.js";
export {
  type ApiRequest,
  capabilitiesOf,
  registerDeclared,
  registerDefinitions,
  startHeartbeat,
} from "./worker/registration.js";
