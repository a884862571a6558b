// What the protocol tests (test/generation/protocols*.test.ts) share: a temporary storage folder, the
// default credential designation, a connector, a production contract, an execution and a call request.
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { TestContext } from 'node:test';
import type { CallRequest, ConnectorSpec, Execution, ProductionContract } from '../../src/generation/connectors/protocols/types.ts';
import { credentialPolicy } from '../../src/kernel/credentials.ts';
import { loadConfig } from '../../src/kernel/config.ts';
import { LocalStore } from '../../src/kernel/storage/local.ts';

// ---------------------------------------------------------------------------------------------
// Fixtures

export function tmp(t: TestContext): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-proto-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** The default designation: variables named SVC_CONNECTOR_SECRET_*. */
export const CREDENTIALS = credentialPolicy(loadConfig({}, {}));

export function connector(kind: ConnectorSpec['kind'], endpoint: string, extra: Partial<ConnectorSpec> = {}): ConnectorSpec {
  return {
    id: 'mc_1',
    label: 'test',
    endpoint,
    kind,
    capability: ['image', 'video', 'tts', 'asr', 'chat', 'prompt'],
    costMode: 'local',
    authEnv: null,
    protocol: {},
    ...extra,
  };
}

export const WORKFLOW = {
  '3': { class_type: 'KSampler', inputs: { seed: '{{seed}}', steps: 20, positive: ['6', 0], negative: ['7', 0] } },
  '5': { class_type: 'EmptyLatentImage', inputs: { width: '{{width}}', height: '{{height}}', batch_size: 1 } },
  '6': { class_type: 'CLIPTextEncode', inputs: { text: 'cinematic, {{prompt}}' } },
  '7': { class_type: 'CLIPTextEncode', inputs: { text: '{{negative_prompt}}' } },
  '9': { class_type: 'SaveImage', inputs: { filename_prefix: 'svc/{{job_id}}', images: ['8', 0] } },
};

export function contract(extra: Partial<ProductionContract> = {}): ProductionContract {
  return {
    organization: { id: 'org_1', name: 'Org' },
    project: { id: 'prj_1', name: 'Night Train' },
    episode: { id: 'ep_1', title: 'Departure', number: 1 },
    shot: { id: 'sht_1', code: 'S01', title: 'Platform', description: 'A woman waits on a rainy platform.' },
    prompt: 'a woman on a rainy platform at night',
    negativePrompt: 'blurry',
    bible: [],
    inputs: [],
    parameters: {},
    ...extra,
  };
}

let jobSeq = 0;
export function execution(kind: string, extra: Partial<Execution> = {}): Execution {
  return { jobId: `job_t${++jobSeq}_${crypto.randomBytes(3).toString('hex')}`, attempt: 1, kind, model: null, deadline: new Date(Date.now() + 60_000).toISOString(), ...extra };
}

export function request(c: ConnectorSpec, kind: string, storageDir: string, extra: Partial<CallRequest> = {}): CallRequest & { refs: string[] } {
  const refs: string[] = [];
  return {
    connector: c,
    contract: contract(),
    execution: execution(kind),
    inputFiles: [],
    resumeRef: null,
    onRef: (ref: string) => {
      refs.push(ref);
    },
    signal: new AbortController().signal,
    storage: new LocalStore(storageDir),
    maxOutputBytes: 50 * 1024 * 1024,
    timeoutMs: 5000,
    env: {},
    credentials: CREDENTIALS,
    ...extra,
    refs,
  };
}
