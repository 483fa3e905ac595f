import { Document, Spectral, type RulesetDefinition } from '@stoplight/spectral-core';
import { Json } from '@stoplight/spectral-parsers';
import { asyncapi, oas } from '@stoplight/spectral-rulesets';

/**
 * Spectral's standard rulesets, as `spectral lint` runs them, through its JS
 * API (no process, no ruleset file). `asyncapi-info-contact-properties` is off:
 * it asks for a contact URL and email, and this project publishes neither; an
 * invented address would mislead whoever reads the document.
 */
const RULESETS: Record<'oas' | 'asyncapi', RulesetDefinition> = {
  oas: oas as RulesetDefinition,
  asyncapi: { extends: [asyncapi as RulesetDefinition], rules: { 'asyncapi-info-contact-properties': 'off' } },
};

/** Every problem Spectral reports, of any severity (error, warning, information, hint), one line each. */
export async function spectralProblems(document: unknown, ruleset: keyof typeof RULESETS): Promise<string[]> {
  const spectral = new Spectral();
  spectral.setRuleset(RULESETS[ruleset]);
  const results = await spectral.run(new Document(JSON.stringify(document, null, 2), Json, `document.${ruleset}.json`));
  return results.map((r) => `${['error', 'warning', 'info', 'hint'][r.severity]} ${r.code} at ${r.path.join('.')}: ${r.message}`);
}
