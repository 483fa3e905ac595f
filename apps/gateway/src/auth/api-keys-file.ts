import { readFileSync } from 'node:fs';
import { Inject, Injectable, Logger, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { ApiKeys, parseApiKeyFile } from './api-keys';

/** Reads and checks STEERLINE_API_KEYS_FILE; throws saying which line is wrong. */
export function readApiKeyFile(path: string): ReadonlyMap<string, string> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new Error(`cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  try {
    return parseApiKeyFile(text);
  } catch (err) {
    throw new Error(`${path}: ${(err as Error).message}`);
  }
}

export const API_KEYS_SOURCE = Symbol('API_KEYS_SOURCE');
export interface ApiKeysSource {
  keys: ReadonlyMap<string, string> | undefined;
  file: string | undefined;
}

/**
 * Rereads the keys file on SIGHUP, so keys are added, rotated and revoked
 * without a restart. A file that no longer parses is refused whole: the keys
 * in force stay, and the error is logged.
 */
@Injectable()
export class ApiKeysFileReloader implements OnModuleInit, OnModuleDestroy {
  private readonly log = new Logger('ApiKeys');
  private readonly onHangUp = () => this.reload();

  constructor(
    @Inject(ApiKeys) private readonly keys: ApiKeys,
    @Inject(API_KEYS_SOURCE) private readonly source: ApiKeysSource,
  ) {}

  onModuleInit(): void {
    if (this.source.file) process.on('SIGHUP', this.onHangUp);
  }

  onModuleDestroy(): void {
    process.off('SIGHUP', this.onHangUp);
  }

  reload(): void {
    try {
      this.keys.replace(this.source.keys, readApiKeyFile(this.source.file!));
      this.log.log({ msg: 'API keys reloaded', keys: this.keys.size });
    } catch (err) {
      this.log.error({ msg: 'API keys file refused; the keys in force stay', error: (err as Error).message });
    }
  }
}
