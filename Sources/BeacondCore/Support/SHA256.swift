import Crypto

/// SHA-256 of a byte buffer (swift-crypto's), for the config file's digest
/// (`status.config.sha256`).
package struct SHA256Digest: Hashable, Sendable, CustomStringConvertible {
    /// The 32 bytes of the digest.
    package let bytes: [UInt8]

    /// The digest of `data`.
    package init(of data: some Collection<UInt8>) {
        bytes = Array(SHA256.hash(data: Array(data)))
    }

    /// 64 lowercase hex digits, as `sha256sum` prints them.
    package var hex: String { HexText.string(bytes) }

    package var description: String { hex }
}
