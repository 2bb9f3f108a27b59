/** Page sizes of the lists of one run's parts (its steps, a trace's spans): mostly read whole. */
export const DEFAULT_DETAIL_PAGE_SIZE = 100;
export const MAX_DETAIL_PAGE_SIZE = 1000;
