import { WAIT_MAX_SECONDS } from '@steerline/contracts';
import { parsePreferWait, preferenceApplied } from './prefer';

describe('Prefer: wait', () => {
  it('is 0 when the client sends no Prefer header', () => {
    expect(parsePreferWait(undefined)).toBe(0);
  });

  it('reads the number of seconds the client is willing to wait', () => {
    expect(parsePreferWait('wait=5')).toBe(5);
  });

  it('finds wait among other preferences and ignores their parameters', () => {
    expect(parsePreferWait('respond-async, wait=7')).toBe(7);
    expect(parsePreferWait('handling=lenient; foo=bar, wait=3; x=1')).toBe(3);
  });

  it('treats the preference name case-insensitively and allows spaces around "="', () => {
    expect(parsePreferWait('WAIT = 4')).toBe(4);
  });

  it('accepts a quoted value', () => {
    expect(parsePreferWait('wait="9"')).toBe(9);
  });

  it('reads wait from any of several Prefer headers', () => {
    expect(parsePreferWait(['respond-async', 'wait=2'])).toBe(2);
  });

  it('honours only the first wait when the client repeats it', () => {
    expect(parsePreferWait('wait=2, wait=30')).toBe(2);
    expect(parsePreferWait('wait=abc, wait=30')).toBe(0);
  });

  it(`caps a long wait at ${WAIT_MAX_SECONDS} seconds, however large the number`, () => {
    expect(parsePreferWait('wait=3600')).toBe(WAIT_MAX_SECONDS);
    expect(parsePreferWait('wait=99999999999999999999999')).toBe(WAIT_MAX_SECONDS);
  });

  it('ignores a wait it cannot read instead of refusing the request', () => {
    for (const header of ['wait', 'wait=', 'wait=-1', 'wait=1.5', 'wait=soon', 'wait="3', '']) {
      expect(parsePreferWait(header)).toBe(0);
    }
  });

  it('does not mistake a preference whose name merely contains "wait" for wait', () => {
    expect(parsePreferWait('waiting=5, x-wait=6')).toBe(0);
  });

  it('does not split a quoted value at a comma', () => {
    expect(parsePreferWait('note="a, wait=9", wait=1')).toBe(1);
  });

  it('reports an honoured wait as Preference-Applied: wait=N', () => {
    expect(preferenceApplied(12)).toBe('wait=12');
  });
});
