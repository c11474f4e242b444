/** The model SDKs, registered for lazyModule (sdk.ts) before the agent's main module loads (agent/snapshot.ts). */
import * as anthropic from '@anthropic-ai/sdk';
import * as openai from 'openai';
import { preloadModule } from './sdk.js';

preloadModule('openai', openai);
preloadModule('@anthropic-ai/sdk', anthropic);
