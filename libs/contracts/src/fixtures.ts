import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** The golden fixtures: one JSON file per event type and version, `<Type>.v<version>.json`. */
export const FIXTURES_DIR = join(__dirname, 'fixtures');

export function loadFixtures(): { file: string; type: string; version: number; json: string }[] {
  return readdirSync(FIXTURES_DIR)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((file) => {
      const [, type, version] = /^(\w+)\.v(\d+)\.json$/.exec(file) ?? [];
      return { file, type, version: Number(version), json: readFileSync(join(FIXTURES_DIR, file), 'utf8') };
    });
}
