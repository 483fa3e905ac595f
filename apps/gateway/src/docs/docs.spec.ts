import { errorCodesOf, ERROR_EXAMPLES } from './examples';
import { wantsPlainPage } from './reference-page';

describe('the reference page and its examples', () => {
  it('gives terminals and ?plain the plain page, and browsers the interactive one', () => {
    expect(wantsPlainPage({}, '*/*')).toBe(true);
    expect(wantsPlainPage({}, undefined)).toBe(true);
    expect(wantsPlainPage({ plain: '' }, 'text/html,application/xhtml+xml')).toBe(true);
    expect(wantsPlainPage({}, 'text/html,application/xhtml+xml,*/*;q=0.8')).toBe(false);
  });

  it('shows an error answer with an example of each code its description names, or of every code of its status', () => {
    expect(errorCodesOf(429, 'queue_full; rate_limited (Retry-After)')).toEqual(['queue_full', 'rate_limited']);
    expect(errorCodesOf(409, 'steer_dropped {reason, text, …}')).toEqual(['steer_dropped']);
    expect(errorCodesOf(409, 'steer_dropped within the wait; turn_not_running; turn_moved_on')).toEqual(['steer_dropped', 'turn_not_running', 'turn_moved_on']);
    expect(errorCodesOf(409, 'conflict')).toEqual(['turn_not_running', 'turn_already_running', 'turn_moved_on', 'already_delivered', 'steer_dropped', 'already_decided', 'already_exists']);
    expect(errorCodesOf(503, 'unavailable {steerId}')).toEqual(['unavailable']);
    for (const [code, body] of Object.entries(ERROR_EXAMPLES)) expect(body.code).toBe(code);
  });
});
