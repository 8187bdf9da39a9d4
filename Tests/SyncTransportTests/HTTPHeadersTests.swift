import Testing

@testable import SyncTransport

@Suite("HTTPHeaders")
struct HTTPHeadersTests {
    @Test func lookupIgnoresCase() {
        let headers: HTTPHeaders = ["Content-Type": "application/json", "Retry-After": "3"]
        #expect(headers["content-type"] == "application/json")
        #expect(headers["RETRY-AFTER"] == "3")
        #expect(headers["Missing"] == nil)
        #expect(headers.contains("CONTENT-type"))
    }

    @Test func settingReplacesEveryFieldOfThatName() {
        var headers = HTTPHeaders()
        headers.add(name: "Accept", value: "a")
        headers.add(name: "X-Other", value: "o")
        headers.add(name: "accept", value: "b")
        #expect(headers.values(for: "ACCEPT") == ["a", "b"])
        headers["Accept"] = "c"
        #expect(headers.values(for: "accept") == ["c"])
        #expect(headers.map(\.name) == ["Accept", "X-Other"])
        headers["accept"] = nil
        #expect(headers.count == 1)
    }

    @Test func credentialsAreRedactedInDescriptions() {
        let headers: HTTPHeaders = ["authorization": "Bearer abc", "Set-Cookie": "id=1", "X-Request": "7"]
        #expect(headers.description == "[authorization: <redacted>, Set-Cookie: <redacted>, X-Request: 7]")
        #expect(String(reflecting: headers) == headers.description)
    }
}
