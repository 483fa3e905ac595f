import { readFileSync } from 'node:fs';
import { chromium, type Browser, type Page } from 'playwright-core';

/**
 * Debian's Chromium (apt-get install chromium; .ci/run installs it when
 * missing) driven by playwright-core: no browser download, nothing fetched.
 */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
  });
}

export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: string[] }[];
}

/**
 * Runs axe-core on the page as it is now. The page's CSP allows no inline
 * script, so axe is evaluated over the DevTools protocol, not injected as a tag.
 */
export async function axeViolations(page: Page): Promise<AxeViolation[]> {
  const source = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');
  await page.evaluate(`${source}\n;void 0`);
  // A string, not a function: the test's own type-check has no DOM types.
  const result = await page.evaluate<{ violations: AxeViolation[] }>("axe.run(document, { resultTypes: ['violations'] })");
  return result.violations.map(({ id, impact, help, nodes }) => ({ id, impact, help, nodes: nodes.map((n) => ({ target: n.target })) }));
}
