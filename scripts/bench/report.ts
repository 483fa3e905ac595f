import { readFile, writeFile } from 'node:fs/promises';

export interface Row {
  group: 'raw' | 'steerline' | 'memory';
  name: string;
  value: number;
  unit: string;
  /** The raw figure this one is held against, measured in the same run. */
  floor?: number;
  floorName?: string;
  /**
   * What the issue asks of this figure; the table says PASS or FAIL. A string is read as
   * `<op> <number>[×] [words]` with op one of ≤ < ≥ > = (none: =): with `×` the ratio to
   * `floor` is compared, without it the value itself (`'≤ 2×'`, `'≥ 0.5×'`, `'< 2048 MiB'`, `'0'`).
   * Anything else: a `Target` (see `ratioAtMost` and the others below).
   */
  target?: string | Target;
}

/** A target with its own test; `text` is what the table shows. */
export interface Target {
  text: string;
  met(value: number, floor: number | undefined): boolean;
}

type Op = '≤' | '<' | '≥' | '>' | '=';
const compare = (op: Op, a: number, b: number) => ({ '≤': a <= b, '<': a < b, '≥': a >= b, '>': a > b, '=': a === b })[op];

/** value ≤ limit (or another comparison) in the row's own unit. */
export const valueIs = (op: Op, limit: number, text = `${op} ${limit}`): Target => ({ text, met: (v) => compare(op, v, limit) });
/** value / floor compared with `k`. */
export const ratioIs = (op: Op, k: number, text = `${op} ${k}×`): Target => ({
  text,
  met: (v, floor) => floor !== undefined && floor > 0 && compare(op, v / floor, k),
});

const TARGET = /^\s*(≤|<=|<|≥|>=|>|=)?\s*(-?[\d\s]*\d(?:\.\d+)?)\s*(×)?/;

/** The `Target` a string target means, or undefined when it is not of the simple form. */
export function parseTarget(text: string): Target | undefined {
  const m = TARGET.exec(text);
  if (!m) return undefined;
  const op = ({ '<=': '≤', '>=': '≥' } as Record<string, Op>)[m[1] ?? ''] ?? ((m[1] ?? '=') as Op);
  const n = Number(m[2].replace(/\s/g, ''));
  return m[3] ? ratioIs(op, n, text) : valueIs(op, n, text);
}

/** PASS, FAIL, or '' for a row without a target (or one whose string target is not of the simple form). */
export function verdict(row: Row): '' | 'PASS' | 'FAIL' {
  if (row.target === undefined) return '';
  const target = typeof row.target === 'string' ? parseTarget(row.target) : row.target;
  if (!target) return '';
  return Number.isFinite(row.value) && target.met(row.value, row.floor) ? 'PASS' : 'FAIL';
}

const fmt = (n: number) => (!Number.isFinite(n) ? 'n/a' : n >= 100 ? n.toFixed(0) : n >= 10 ? n.toFixed(1) : n.toFixed(2));

function ratio(row: Row): string {
  if (row.floor === undefined) return '';
  return `${(row.value / row.floor).toFixed(2)}× ${row.floorName}`;
}

const targetText = (row: Row) => (row.target === undefined ? '' : typeof row.target === 'string' ? row.target : row.target.text);

/** The table for the terminal, and docs/performance.md with the latest run between its markers (`bench` or another section's). */
export function renderReport(rows: Row[], machine: string, section = 'bench') {
  const START = `<!-- ${section}:start -->`;
  const END = `<!-- ${section}:end -->`;
  const lines = [
    `| figure | value | ratio to its floor | target | met |`,
    `| --- | ---: | --- | --- | --- |`,
    ...rows.map((r) => `| ${r.group === 'raw' ? `*raw:* ${r.name}` : r.name} | ${fmt(r.value)} ${r.unit} | ${ratio(r)} | ${targetText(r)} | ${verdict(r)} |`),
  ];
  const stamp = `Run of ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC on ${machine}.`;
  const table = `${stamp}\n\n${lines.join('\n')}`;
  return {
    table,
    async write(path: string) {
      const doc = await readFile(path, 'utf8').catch(() => `# Performance\n\n${START}\n${END}\n`);
      const [head, rest] = doc.includes(START) ? doc.split(START) : [`${doc}\n`, `\n${END}\n`];
      const tail = rest.includes(END) ? rest.slice(rest.indexOf(END)) : END;
      await writeFile(path, `${head}${START}\n${table}\n${tail}`);
    },
  };
}
