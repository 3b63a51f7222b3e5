/**
 * A real browser for the dashboard tests: Debian's chromium (installed by .ci/run) driven by playwright-core,
 * headless, with a fresh empty profile per launch; playwright never downloads a browser here. Screenshots go to
 * test-artifacts/ (git-ignored).
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { type BrowserContext, chromium, type Page } from 'playwright-core';

const CHROMIUM = '/usr/bin/chromium';
export const ARTIFACTS = resolve(import.meta.dirname, '../../test-artifacts');

const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export interface Browser {
  readonly context: BrowserContext;
  /** A new tab that records what a person would notice went wrong: dialogs, page errors, CSP violations. */
  open(url: string): Promise<WatchedPage>;
  close(): Promise<void>;
}

export interface WatchedPage {
  readonly page: Page;
  readonly dialogs: string[];
  readonly pageErrors: string[];
  readonly cspViolations: string[];
  screenshot(name: string): Promise<string>;
}

export function hasChromium(): boolean {
  return existsSync(CHROMIUM);
}

export async function launchBrowser(
  options: { httpCredentials?: { username: string; password: string } } = {},
): Promise<Browser> {
  const profile = mkdtempSync(join(tmpdir(), 'vigie-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: ARGS,
    viewport: { width: 1400, height: 900 },
    ...(options.httpCredentials ? { httpCredentials: options.httpCredentials } : {}),
  });
  return {
    context,
    async open(url) {
      const page = await context.newPage();
      const watched: WatchedPage = {
        page,
        dialogs: [],
        pageErrors: [],
        cspViolations: [],
        async screenshot(name) {
          mkdirSync(ARTIFACTS, { recursive: true });
          const path = join(ARTIFACTS, `${name}.png`);
          await page.screenshot({ path, fullPage: false });
          return path;
        },
      };
      page.on('dialog', (dialog) => {
        watched.dialogs.push(dialog.message());
        void dialog.dismiss();
      });
      page.on('pageerror', (error) => watched.pageErrors.push(error.message));
      page.on('console', (message) => {
        if (/Content Security Policy/i.test(message.text())) watched.cspViolations.push(message.text());
      });
      await page.goto(url);
      return watched;
    },
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/** Signs in through the console's form, with a user and password or a token. */
export async function signIn(page: Page, credentials: { username: string; password: string } | { token: string }) {
  const form = page.locator('form[aria-label="Sign in"]');
  await form.waitFor();
  if ('token' in credentials) {
    await form.locator('button:text-is("Token")').click();
    await form.locator('input[name="token"]').fill(credentials.token);
  } else {
    await form.locator('input[name="username"]').fill(credentials.username);
    await form.locator('input[name="password"]').fill(credentials.password);
  }
  await form.locator('button[type="submit"]').click();
}
