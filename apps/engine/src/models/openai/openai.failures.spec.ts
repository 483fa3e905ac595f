import { APIConnectionError, APIConnectionTimeoutError, APIError } from 'openai';
import { MalformedAnswerError } from './openai.answer';
import { backoffMs, classify } from './openai.failures';

const status = (code: number) => APIError.generate(code, { message: `status ${code}` }, undefined, new Headers());

describe('which model failures are tried again', () => {
  it.each([500, 502, 503, 504])('a %i is transient', (code) => {
    expect(classify(status(code))).toMatchObject({ retry: true, code: 'model_unavailable' });
  });

  it.each([400, 401, 403, 404, 422, 429])('a %i is not tried again: the same request would be refused again', (code) => {
    expect(classify(status(code))).toMatchObject({ retry: false, code: 'model_rejected' });
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
