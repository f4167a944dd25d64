/** Cloud image names of uploads (pure). */

/** The cloud image name: `image-name-format` with `{image_name}`, `{timestamp}`, `{build_id}`, `{upload_id}`. */
export function externalImageName(format: string, values: { imageName: string; timestamp: number; buildId: string; uploadId?: string }): string {
  return format.replace(/\{(image_name|timestamp|build_id|upload_id)\}/g, (_, k: string) => {
    switch (k) {
      case 'image_name': return values.imageName;
      case 'timestamp': return String(values.timestamp);
      case 'build_id': return values.buildId;
      default: return values.uploadId ?? '';
    }
  });
}
