/**
 * The one place Gearman function names are built and parsed (wire-compatible with
 * Nodepool 0.3.x): `image-build:<diskimage>`, `image-upload:<id>`, `image-delete:<id>`.
 */

const BUILD = 'image-build:';
const UPLOAD = 'image-upload:';
const DELETE = 'image-delete:';

/** A parsed image function name. */
export type ImageFunction =
  | { kind: 'build'; diskimage: string }
  | { kind: 'upload'; imageId: string }
  | { kind: 'delete'; imageId: string };

export const fn = {
  imageBuild: (diskimage: string): string => BUILD + diskimage,
  imageUpload: (imageId: string): string => UPLOAD + imageId,
  imageDelete: (imageId: string): string => DELETE + imageId,

  /** Parses a function name; `undefined` for names that are not image functions. */
  parse(name: string): ImageFunction | undefined {
    if (name.startsWith(BUILD)) return { kind: 'build', diskimage: name.slice(BUILD.length) };
    if (name.startsWith(UPLOAD)) return { kind: 'upload', imageId: name.slice(UPLOAD.length) };
    if (name.startsWith(DELETE)) return { kind: 'delete', imageId: name.slice(DELETE.length) };
    return undefined;
  },
} as const;
