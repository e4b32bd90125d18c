extension StateMessage {
    var zoneName: String? { nil }
}
