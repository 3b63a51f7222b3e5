#!/usr/bin/env node
// Runs the TypeScript sources directly through tsx's loader, so `npx vigie` works in a checkout
// right after `npm install`, with no build step to forget.
import { register } from 'tsx/esm/api';

register();
await import('../src/main.ts');
