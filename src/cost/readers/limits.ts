/** Guards shared by the readers: config files are small; anything else is refused, never parsed. */
export const MAX_CONFIG_CHARS = 1_000_000;
/** YAML aliases expanded at most this many times per document (an alias bomb exceeds it at once). */
export const MAX_ALIAS_COUNT = 100;
/** At most this many leaves per document. */
export const MAX_ENTRIES = 20_000;
