import { mediaTypeIs } from './fastify';

describe('the JSON media types a body route reads', () => {
  it('takes application/json with or without a UTF-8 charset, in any case', () => {
    expect(mediaTypeIs('application/json')).toBe('application/json');
    expect(mediaTypeIs('Application/JSON; charset=utf-8')).toBe('application/json');
  });

  it('takes a +json structured syntax suffix', () => {
    expect(mediaTypeIs('application/merge-patch+json')).toBe('application/merge-patch+json');
  });

  it('refuses other types, and a missing one', () => {
    expect(mediaTypeIs('text/plain')).toBe(false);
    expect(mediaTypeIs('application/jsonx')).toBe(false);
    expect(mediaTypeIs('application/x-www-form-urlencoded')).toBe(false);
    expect(mediaTypeIs(undefined)).toBe(false);
  });
});
