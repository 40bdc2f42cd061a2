/** The ids of the patch markers (`patched()` calls) recorded in a history, in order. */
export function patchIdsOf(historyJson: string): string[] {
  type Marker = { markerName?: string; details?: Record<string, { payloads?: { data?: string }[] }> };
  const events = (JSON.parse(historyJson) as { events?: { markerRecordedEventAttributes?: Marker }[] }).events ?? [];
  return events.flatMap((e) => {
    const marker = e.markerRecordedEventAttributes;
    const data = marker?.markerName === 'core_patch' ? marker.details?.['patch-data']?.payloads?.[0]?.data : undefined;
    return data === undefined ? [] : [(JSON.parse(Buffer.from(data, 'base64').toString('utf8')) as { id: string }).id];
  });
}
