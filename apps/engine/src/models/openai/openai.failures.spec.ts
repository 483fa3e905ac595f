import { APIConnectionError, APIConnectionTimeoutError, APIError } from 'openai';
import { MalformedAnswerError } from './openai.answer';
import { backoffMs, classify, MAX_RETRY_AFTER_MS, retryAfter } from './openai.failures';

const status = (code: number, headers: Record<string, string> = {}) => APIError.generate(code, { message: `status ${code}` }, undefined, new Headers(headers));

describe('which model failures are tried again', () => {
  it.each([408, 409, 500, 502, 503, 504])('a %i is transient', (code) => {
    expect(classify(status(code))).toMatchObject({ retry: true, code: 'model_unavailable' });
  });

  it.each([400, 401, 403, 404, 413, 422])('a %i is not tried again: the same request would be refused again', (code) => {
    expect(classify(status(code))).toMatchObject({ retry: false, code: 'model_rejected' });
  });

  it('a 429 is tried again, after the endpoint’s Retry-After when it gives one', () => {
    expect(classify(status(429))).toEqual(expect.objectContaining({ retry: true, code: 'model_rate_limited' }));
    expect(classify(status(429)).retryAfterMs).toBeUndefined();
    expect(classify(status(429, { 'retry-after': '2' }))).toMatchObject({ retry: true, retryAfterMs: 2000 });
    expect(classify(status(429, { 'retry-after-ms': '150', 'retry-after': '9' }))).toMatchObject({ retry: true, retryAfterMs: 150 });
  });

  it('a 429 that asks for a longer wait than the limit fails the turn at once instead of stalling it', () => {
    const seconds = String(MAX_RETRY_AFTER_MS / 1000 + 1);
    expect(classify(status(429, { 'retry-after': seconds }))).toMatchObject({ retry: false, code: 'model_rate_limited', retryAfterMs: MAX_RETRY_AFTER_MS + 1000 });
  });

  it('reads Retry-After as seconds or as an HTTP date, and ignores what it cannot read', () => {
    const now = Date.parse('2026-11-29T12:00:00Z');
    expect(retryAfter(new Headers({ 'retry-after': '1.5' }), now)).toBe(1500);
    expect(retryAfter(new Headers({ 'retry-after': 'Sun, 29 Nov 2026 12:00:03 GMT' }), now)).toBe(3000);
    expect(retryAfter(new Headers({ 'retry-after': 'Sun, 29 Nov 2026 11:00:00 GMT' }), now)).toBe(0);
    expect(retryAfter(new Headers({ 'retry-after': 'soon' }), now)).toBeUndefined();
    expect(retryAfter(new Headers(), now)).toBeUndefined();
    expect(retryAfter(undefined, now)).toBeUndefined();
  });

  it('a timeout, a connection failure and a malformed answer are transient', () => {
    expect(classify(new APIConnectionTimeoutError())).toMatchObject({ retry: true, code: 'model_timeout' });
    expect(classify(new APIConnectionError({ cause: new Error('ECONNREFUSED') }))).toMatchObject({ retry: true, code: 'model_unavailable' });
    expect(classify(new MalformedAnswerError('bad'))).toMatchObject({ retry: true, code: 'model_malformed_answer' });
  });

  it('backs off exponentially, with jitter, up to a ceiling', () => {
    for (let i = 0; i < 50; i++) {
      expect(backoffMs(1, 500)).toBeGreaterThanOrEqual(250);
      expect(backoffMs(1, 500)).toBeLessThanOrEqual(500);
      expect(backoffMs(3, 500)).toBeGreaterThanOrEqual(1000);
      expect(backoffMs(3, 500)).toBeLessThanOrEqual(2000);
      expect(backoffMs(20, 500)).toBeLessThanOrEqual(8000);
    }
  });
});
