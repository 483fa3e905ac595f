/** One sample of a Prometheus text exposition: `name{labels} value`. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export function parseExposition(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)/.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const [, k, v] of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[k] = v;
    samples.push({ name: m[1], labels, value: Number(m[3]) });
  }
  return samples;
}

/** The sum over every scrape of the samples of `name` whose labels include `labels`. */
export function total(scrapes: Sample[][], name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  for (const samples of scrapes) {
    for (const s of samples) if (s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v)) sum += s.value;
  }
  return sum;
}

export async function scrape(url: string): Promise<Sample[]> {
  const res = await fetch(url);
  if (res.status !== 200) throw new Error(`${url} answered ${res.status}`);
  return parseExposition(await res.text());
}
