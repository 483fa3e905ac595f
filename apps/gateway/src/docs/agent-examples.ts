import type { Agent } from '@steerline/contracts';
// The v3 fixture holds a turn that ran agent reviewer@3: the examples show the same agent.
import turnStarted from '../../../../libs/contracts/src/fixtures/TurnStarted.v3.json';
import type { OperationExamples } from './examples';

const { model, instructions, settings, tools } = turnStarted.data;
const definition = {
  description: 'Reviews a change and answers in short bullet points',
  instructions,
  model: model as Agent['model'],
  settings: settings as Agent['settings'],
  tools,
  approvals: { tools: ['mcp__files__write'] },
};
const version = (v: number): Agent => ({ name: 'reviewer', version: v, createdAt: turnStarted.at, ...definition });

/** Examples of the agent and discovery routes (see examples.ts), keyed by operationId. */
export const AGENT_EXAMPLES: Record<string, OperationExamples> = {
  createAgent: { request: { name: 'reviewer', ...definition }, responses: { 201: version(1) } },
  updateAgent: { request: definition, responses: { 200: version(4) } },
  listAgents: { responses: { 200: { agents: [version(3)] } } },
  getAgent: { responses: { 200: version(3) } },
  getAgentVersion: { responses: { 200: version(3) } },
  listTools: {
    responses: {
      200: {
        tools: [
          { name: 'echo', description: 'Echoes its text back', parameters: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] }, source: 'builtin', approval: false },
          { name: 'mcp__files__read', description: 'Reads a file', parameters: { type: 'object', properties: { path: { type: 'string' } } }, source: 'mcp:files', approval: false },
        ],
      },
    },
  },
  listModels: {
    responses: {
      200: {
        providers: ['scripted', 'openai', 'anthropic'],
        endpoints: [
          { name: 'default', provider: 'openai', baseURL: 'https://api.openai.com/v1' },
          { name: 'local', provider: 'openai', baseURL: 'http://127.0.0.1:8000/v1' },
        ],
      },
    },
  },
};
