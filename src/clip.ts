/** Echoed input, clipped so that a hostile value cannot blow up an error message. */
export function clip(text: string, max = 120): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}
