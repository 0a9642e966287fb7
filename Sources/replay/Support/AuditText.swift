import Foundation
import ReadingEvents

/// The payload of an event for the audit listing, as one JSON object: the export's `data` (encoded
/// once, by the export's own encoder), or for an event this build does not know, its size and stored
/// bytes (`{"bytes":N,"rawPayload":"<base64>"}`).
func auditFields(_ e: EventEnvelope) -> String {
    if case .unknown(let unknown) = e.event {
        return "{\"bytes\":\(unknown.payload.count),\"rawPayload\":\"\(Data(unknown.payload).base64EncodedString())\"}"
    }
    guard let data = JSONEventCodec.encodeData(e.event) else { return "null" }
    return String(decoding: data, as: UTF8.self)
}

/// The local wall-clock time of an instant in its zone with its offset ("2026-03-01T21:30:00+09:00"),
/// for the audit listing.
func localTimeText(_ t: Timestamp, _ zone: ZoneID) -> String {
    let offset = zone.timeZone.secondsFromGMT(for: t.date)
    let shifted = Timestamp(microseconds: t.microseconds + Int64(offset) * 1_000_000).description
    let sign = offset >= 0 ? "+" : "-"
    return String(shifted.prefix(19)) + String(format: "%@%02d:%02d", sign, abs(offset) / 3600, abs(offset) % 3600 / 60)
}
