import { execFileSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { basename } from 'node:path';
import { describe, expect, it } from 'vitest';

describe('the test run temporary root', () => {
  it('puts the workers and what they spawn under one directory the run removes', () => {
    expect(basename(tmpdir())).toMatch(/^vigie-run-/);
    const childTmp = execFileSync(process.execPath, ['-p', 'require("node:os").tmpdir()'], { encoding: 'utf8' }).trim();
    expect(childTmp).toBe(tmpdir());
  });
});
