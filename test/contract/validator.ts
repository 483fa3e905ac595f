import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import type { JsonSchema } from '@steerline/contracts';

// One Ajv for the suite: it caches compiled schemas by `$id`.
const ajv = new Ajv({ allErrors: true, strict: true });
addFormats(ajv);

/** A JSON Schema validator (draft-07, formats checked) that lists what fails, empty when valid. */
export function schemaValidator(schema: JsonSchema): (value: unknown) => string[] {
  const id = typeof schema.$id === 'string' ? schema.$id : undefined;
  const validate = (id && ajv.getSchema(id)) || ajv.compile(schema);
  return (value) => (validate(value) ? [] : (validate.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message}`));
}
