/**
 * Contrast as WCAG 2 defines it (relative luminance of sRGB colours, ratio (L1 + 0.05) / (L2 + 0.05)): a page's
 * texts must read at 4.5:1 at least (AA) in both themes. The accent colour is the company's, so the text written
 * on it is chosen here, black or white, whichever contrasts more; the palette's own pairs are checked by a test.
 */

function channel(value: number): number {
  const c = value / 255;
  return c <= 0.040_45 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
}

/** `#rrggbb`'s relative luminance, 0 (black) to 1 (white). */
function luminance(hex: string): number {
  const n = Number.parseInt(hex.slice(1), 16);
  return 0.2126 * channel((n >> 16) & 255) + 0.7152 * channel((n >> 8) & 255) + 0.0722 * channel(n & 255);
}

export function contrast(a: string, b: string): number {
  const [light, dark] = [luminance(a), luminance(b)].sort((x, y) => y - x) as [number, number];
  return (light + 0.05) / (dark + 0.05);
}

/** Black or white, whichever reads better on `background` (one of them always reaches 4.5:1). */
export function textOn(background: string): '#000000' | '#ffffff' {
  return contrast(background, '#000000') >= contrast(background, '#ffffff') ? '#000000' : '#ffffff';
}
