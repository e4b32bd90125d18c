// Target `remote-state`: the venue API's `GET /api/state` body (RemoteStateDocument, over
// RemoteJSON and RemoteJSONDecoder), compiled with those BeacondCore files only (Fuzz/run.sh).
// Any bytes either give a snapshot or a RemoteDocumentError; a snapshot is already capped (every
// text field within its UTF-8 cap, numbers finite), so capping it again changes nothing, and its
// fields are valid Unicode that survives a UTF-8 round trip.
import BLEPayload
import CircuitState
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRemoteStateDocument(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let input = FuzzInput(data, size)
    let body = Data(input.bytes)
    let snapshot: RemoteSnapshot
    do {
        snapshot = try RemoteStateDocument.snapshot(fromBody: body)
    } catch let error as RemoteDocumentError {
        fuzzCheck(!error.description.isEmpty, "an error without a reason")
        return 0
    } catch {
        fuzzCheck(false, "an error of another type: \(error)")
        return 0
    }
    fuzzCheck(RemoteStateDocument.capped(snapshot) == snapshot, "a parsed snapshot is not capped: \(snapshot)")
    let texts = [
        snapshot.id, snapshot.globalMode, snapshot.mode, snapshot.wind, snapshot.forecast, snapshot.lastUpdated,
    ]
    for text in texts.compactMap({ $0 }) {
        fuzzCheck(text.utf8.count <= RemoteStateDocument.maxFieldBytes, "a field of \(text.utf8.count) bytes")
        fuzzCheck(String(decoding: Array(text.utf8), as: UTF8.self) == text, "a field that is not valid UTF-8")
    }
    if let message = snapshot.message {
        fuzzCheck(message.utf8.count <= RemoteStateDocument.maxMessageBytes, "a message of \(message.utf8.count) bytes")
    }
    for number in [snapshot.temperature, snapshot.humidity].compactMap({ $0 }) {
        fuzzCheck(number.isFinite, "a non-finite number \(number)")
    }
    _ = snapshot.trackMode
    return 0
}

func fuzzSeeds(_ sources: SeedSources) -> [[UInt8]] {
    let documents = [
        #"{}"#, #"[]"#, #"[{"global_mode":"red_flag"}]"#,
        #"{"id":"1","global_mode":"EVACUATION","mode":"normal","message":"Leave by gate 3","temperature":21.5,"#
            + #""humidity":40,"wind":"5 km/h NW","forecast":"sun","last_updated":"2026-05-01T12:00:00Z"}"#,
        #"{"global_mode":"","mode":"SC","temperature":1e400,"humidity":-0.0}"#,
        #"{"mode":3,"message":"\u00e9\ud83d\ude00\n\u001b[31m","id":null}"#,
        #"{"mode":"a","mode":"b"}"#, #"{"a":{"b":[1,2,{"c":"d"}]},"global_mode":"VSC"}"#,
        #"{"message":"\#(String(repeating: "é", count: 700))"}"#,
    ]
    return documents.map { Array($0.utf8) }
}
