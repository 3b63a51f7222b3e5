/**
 * Dashboard with 12,000 checks (docs/dashboard.md "Scale"): created through the bulk API against a local TCP
 * listener with a long interval, then visited in Debian's chromium. Figures: what a visit costs in CPU (the
 * server's plus the page's main thread, so that other load on the machine does not count), the wall time of a
 * visit, of the next page and of a name filter, and the slowest frame while scrolling top to bottom.
 * Floors: a second visit costs under a second of CPU (the first, which also parses the script and computes every
 * check's uptime, 1.5 s), paging and filtering answer within a second, no scrolling frame takes 250 ms.
 *
 * `node --import tsx bench/dashboard.ts`
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ARTIFACTS, hasChromium, launchBrowser } from '../test/helpers/browser.ts';
import { createManyChecks } from '../test/helpers/many-checks.ts';
import { startTcpTarget } from '../test/helpers/targets.ts';
import { startBenchServer, writeResult } from './http-load.ts';

const CHECKS = 12_000;
const FLOOR_SECOND_VISIT_CPU_MS = 1000;
const FLOOR_FIRST_VISIT_CPU_MS = 1500;
const FLOOR_INTERACTION_MS = 1000;
const FLOOR_FRAME_MS = 250;

/** CPU time (user + system, ms) a process has used, from /proc (Linux clock ticks are 10 ms). */
function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

if (!hasChromium()) {
  console.error('bench dashboard: needs /usr/bin/chromium (Debian package chromium)');
  process.exit(1);
}

const [server, tcp, browser] = await Promise.all([startBenchServer(), startTcpTarget(), launchBrowser()]);
try {
  await createManyChecks(server, tcp.port, CHECKS);
  await new Promise((resolve) => setTimeout(resolve, 1000));

  const pid = server.process.pid as number;
  const wallMs: Record<string, number> = {};
  const cpu: Record<string, number> = {};
  let page = await browser.context.newPage();
  // Each visit is a new tab, whose renderer counts its main-thread time from zero.
  for (const visit of ['firstVisit', 'secondVisit']) {
    await page.close();
    page = await browser.context.newPage();
    const cdp = await browser.context.newCDPSession(page);
    await cdp.send('Performance.enable');
    const serverBefore = cpuMs(pid);
    const started = performance.now();
    await page.goto(`${server.url}/frontend/index.html`);
    await page.locator('[data-count="all"] strong', { hasText: String(CHECKS) }).waitFor();
    await page.locator('tr.check').nth(99).waitFor();
    wallMs[visit] = Math.round(performance.now() - started);
    const pageMs =
      1000 *
      ((await cdp.send('Performance.getMetrics')).metrics.find((metric) => metric.name === 'TaskDuration')?.value ?? 0);
    const serverMs = cpuMs(pid) - serverBefore;
    cpu[`${visit}Server`] = serverMs;
    cpu[`${visit}Page`] = Math.round(pageMs);
    cpu[visit] = Math.round(serverMs + pageMs);
  }

  let started = performance.now();
  await page.click('.pager button:text-is("Next →")');
  await page.locator('tr.check[data-name="check-00100"]').waitFor();
  wallMs.nextPage = Math.round(performance.now() - started);

  started = performance.now();
  await page.fill('input[name="name"]', 'check-11999');
  await page.waitForFunction(`document.querySelectorAll('tr.check').length === 1`);
  wallMs.nameFilter = Math.round(performance.now() - started);
  await page.fill('input[name="name"]', '');

  const frames = (await page.evaluate(`(async () => {
    const intervals = [];
    let last = performance.now();
    const height = document.documentElement.scrollHeight;
    for (let y = 0; y <= height; y += 200) {
      scrollTo(0, y);
      await new Promise((resolve) => requestAnimationFrame(resolve));
      const now = performance.now();
      intervals.push(now - last);
      last = now;
    }
    return intervals.sort((a, b) => a - b);
  })()`)) as number[];
  const slowestFrameMs = Math.round(frames.at(-1) ?? 0);
  await page.screenshot({ path: join(ARTIFACTS, 'bench-checks-12000.png') });

  writeResult('dashboard', {
    checks: CHECKS,
    cpuMs: cpu,
    wallMs,
    slowestFrameMs,
    floors: {
      secondVisitCpuMs: FLOOR_SECOND_VISIT_CPU_MS,
      firstVisitCpuMs: FLOOR_FIRST_VISIT_CPU_MS,
      interactionMs: FLOOR_INTERACTION_MS,
      frameMs: FLOOR_FRAME_MS,
    },
    pass:
      (cpu.secondVisit ?? Infinity) < FLOOR_SECOND_VISIT_CPU_MS &&
      (cpu.firstVisit ?? Infinity) < FLOOR_FIRST_VISIT_CPU_MS &&
      (wallMs.nextPage ?? Infinity) < FLOOR_INTERACTION_MS &&
      (wallMs.nameFilter ?? Infinity) < FLOOR_INTERACTION_MS &&
      slowestFrameMs < FLOOR_FRAME_MS,
  });
} finally {
  await Promise.all([browser.close(), server.stop(), tcp.close()]);
}
