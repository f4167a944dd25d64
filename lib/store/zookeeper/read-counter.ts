/** Counts the reads of one store (every client of it adds to the same counter). */
export class ReadCounter {
  count = 0;
}
