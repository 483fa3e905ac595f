import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { asyncApiDocument } from './asyncapi';
import {
  compareSchemas,
  CURRENT_VERSIONS,
  DEFAULT_PREFIX,
  EVENT_TYPES,
  eventJsonSchemas,
  type EventType,
  type JsonSchema,
  subjects,
  type UpcasterRegistry,
  upcasters as defaultUpcasters,
} from '@steerline/contracts';
import { streamConfig } from './nats';

/**
 * The generated contract files (paths relative to the repository) and the
 * rules that guard the committed ones. Shared by `npm run contracts:generate`,
 * which writes them, and the contract gate, which regenerates them in memory.
 */
export const ASYNCAPI_FILE = 'libs/contracts/asyncapi.json';
export const SCHEMAS_DIR = 'libs/contracts/schemas';
/** The stream at three replicas, for `nats stream add --config` on a cluster (deploy/nats). */
export const STREAM_FILE = 'deploy/nats/stream.json';

/** The stream definition an operator creates up front on a cluster: every limit spelled out. */
export function clusterStreamDefinition(prefix = DEFAULT_PREFIX, replicas = 3): Record<string, unknown> {
  const unlimited = { max_consumers: -1, max_msgs: -1, max_bytes: -1, max_age: 0, max_msg_size: -1, max_msgs_per_subject: -1 };
  return { ...streamConfig(subjects(prefix), replicas), ...unlimited };
}

export function toFileText(json: unknown): string {
  return `${JSON.stringify(json, null, 2)}\n`;
}

/** Every generated file: the AsyncAPI document and each event type's schema at its current version. */
export function generatedContractFiles(schemas: Map<string, JsonSchema> = eventJsonSchemas()): Map<string, string> {
  const files = new Map<string, string>([
    [ASYNCAPI_FILE, toFileText(asyncApiDocument())],
    [STREAM_FILE, toFileText(clusterStreamDefinition())],
  ]);
  for (const [file, schema] of schemas) files.set(`${SCHEMAS_DIR}/${file}`, toFileText(schema));
  return files;
}

export interface SchemaProblem {
  file: string;
  kind: 'breaking' | 'outdated' | 'missing' | 'orphan';
  message: string;
}

/**
 * Checks the committed event schemas against freshly generated ones.
 *
 * A committed `<Type>.v<n>.json` is the contract of version n for as long as
 * events of it sit in a log anywhere. So:
 *   - at the current version, a compatible change (a new optional field) only
 *     needs the file regenerated; a breaking one needs a new version;
 *   - an older version's file stays as it is (the history), and an upcaster
 *     must lead from it to the current version.
 */
export function checkCommittedSchemas(
  committed: Map<string, JsonSchema>,
  generated: Map<string, JsonSchema> = eventJsonSchemas(),
  registry: UpcasterRegistry = defaultUpcasters,
): SchemaProblem[] {
  const problems: SchemaProblem[] = [];
  for (const [file, schema] of generated) {
    const before = committed.get(file);
    if (!before) {
      problems.push({ file, kind: 'missing', message: `${file} is not committed: run npm run contracts:generate` });
      continue;
    }
    const changes = compareSchemas(before, schema);
    if (changes.breaking.length) {
      const [type, version] = parseSchemaFile(file)!;
      problems.push({
        file,
        kind: 'breaking',
        message:
          `${type} v${version} changed incompatibly: ${changes.breaking.join('; ')}. ` +
          `A committed version is a contract for every event already in the log. Bump ${type} to v${version + 1}, ` +
          `register an upcaster from v${version} (libs/contracts/src/upcasters.ts), keep the v${version} fixture and schema, ` +
          `then run npm run contracts:generate.`,
      });
    } else if (JSON.stringify(before) !== JSON.stringify(schema)) {
      problems.push({ file, kind: 'outdated', message: `${file} has compatible changes (${changes.compatible.join('; ')}): run npm run contracts:generate` });
    }
  }
  for (const file of committed.keys()) {
    if (generated.has(file)) continue;
    const parsed = parseSchemaFile(file);
    const known = parsed && (EVENT_TYPES as readonly string[]).includes(parsed[0]);
    const [type, version] = parsed ?? ['', 0];
    if (!known || version > CURRENT_VERSIONS[type as EventType]) {
      problems.push({ file, kind: 'orphan', message: `${file} names no event type or version of this contract` });
      continue;
    }
    for (let v = version; v < CURRENT_VERSIONS[type as EventType]; v++) {
      if (!registry.has(type, v)) {
        problems.push({ file, kind: 'orphan', message: `${type} v${version} is in the history but no upcaster leads from v${v} to v${v + 1}` });
        break;
      }
    }
  }
  return problems;
}

/** `TurnStarted.v1.json` → ['TurnStarted', 1]. */
export function parseSchemaFile(file: string): [string, number] | undefined {
  const match = /^(\w+)\.v(\d+)\.json$/.exec(file.replace(/^.*\//, ''));
  return match ? [match[1], Number(match[2])] : undefined;
}

/** The committed event schemas under `root` (the repository), by file name. */
export function readCommittedSchemas(root: string): Map<string, JsonSchema> {
  const dir = join(root, SCHEMAS_DIR);
  if (!existsSync(dir)) return new Map();
  return new Map(
    readdirSync(dir)
      .filter((f) => f.endsWith('.json'))
      .sort()
      .map((f) => [f, JSON.parse(readFileSync(join(dir, f), 'utf8')) as JsonSchema]),
  );
}
