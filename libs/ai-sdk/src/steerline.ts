import { SteerlineClient, type ClientOptions, type ExternalTurnInput } from '@steerline/client';
import { SteerlineTurn } from './turn';

export interface StartTurnOptions extends ExternalTurnInput {
  conversationId: string;
}

/** Steerline for an agent written with the AI SDK: start a turn, then `turn.run(hooks => generateText({ ...hooks }))`. */
export class Steerline {
  /** The typed client of the whole API: steer, receipts, events, cancel. */
  readonly client: SteerlineClient;

  constructor(opts: ClientOptions | { client: SteerlineClient }) {
    this.client = 'client' in opts ? opts.client : new SteerlineClient(opts);
  }

  /** Starts a turn that this process runs (`"runner": "external"`), holding its runner lease until it ends. */
  async startTurn({ conversationId, ...input }: StartTurnOptions): Promise<SteerlineTurn> {
    const external = await this.client.startExternalTurn(conversationId, input);
    return new SteerlineTurn(external, conversationId, input.prompt);
  }
}
