import { readFile, writeFile } from 'node:fs/promises';

export interface Row {
  group: 'raw' | 'steerline' | 'memory';
  name: string;
  value: number;
  unit: string;
  /** The raw figure this one is held against, measured in the same run. */
  floor?: number;
  floorName?: string;
  target?: string;
}

const fmt = (n: number) => (!Number.isFinite(n) ? 'n/a' : n >= 100 ? n.toFixed(0) : n >= 10 ? n.toFixed(1) : n.toFixed(2));

function ratio(row: Row): string {
  if (row.floor === undefined) return '';
  return `${(row.value / row.floor).toFixed(2)}× ${row.floorName}`;
}

/** The table for the terminal, and docs/performance.md with the latest run between its markers (`bench` or another section's). */
export function renderReport(rows: Row[], machine: string, section = 'bench') {
  const START = `<!-- ${section}:start -->`;
  const END = `<!-- ${section}:end -->`;
  const lines = [
    `| figure | value | ratio to its floor | target |`,
    `| --- | ---: | --- | --- |`,
    ...rows.map((r) => `| ${r.group === 'raw' ? `*raw:* ${r.name}` : r.name} | ${fmt(r.value)} ${r.unit} | ${ratio(r)} | ${r.target ?? ''} |`),
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
