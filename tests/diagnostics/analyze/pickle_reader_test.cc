// The pickle reader on hand-built pickles: every opcode it reads, the memo's sharing, objects it
// must not build, and malformed, truncated, too deep and too large input, each an error.
#include "diagnostics/analyze/pickle_reader.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "pickle_test_util.h"

namespace ccscope::diagnostics {
namespace {

using nlohmann::json;
using namespace pickle_test;

// A pickle of `body` (the opcodes that leave one value on the stack), protocol 2.
std::string pk(const std::string& body) { return proto() + body + "."; }

json decoded(const std::string& data, const PickleOptions& options = {}) {
  auto r = decodePickle(data, options);
  EXPECT_TRUE(r.isOk()) << r.status().toString();
  return r.isOk() ? *r : json("<error>");
}

std::string errorOf(const std::string& data, const PickleOptions& options = {}) {
  auto r = decodePickle(data, options);
  EXPECT_FALSE(r.isOk()) << "decoded: " << r->dump();
  return r.isOk() ? std::string() : r.status().message();
}

TEST(PickleReaderTest, ScalarsAndNumbers) {
  const std::string body = "(N" + op(0x88) + op(0x89) + K(255) + "M" + le(65535, 2) + "J" +
                           le(static_cast<uint32_t>(-5), 4) + "G" +
                           std::string("\x3f\xf8\0\0\0\0\0\0", 8) + "l";
  EXPECT_EQ(decoded(pk(body)), json::parse(R"([null, true, false, 255, 65535, -5, 1.5])"));
}

TEST(PickleReaderTest, LongIntegersOfEveryWidth) {
  auto long1 = [](const std::string& bytes) {
    return op(0x8a) + op(static_cast<int>(bytes.size())) + bytes;
  };
  const std::string body = "(" + long1("") + long1("\xff") + long1(le(1796407438366292474, 8)) +
                           long1(le(uint64_t{1} << 63, 8)) +          // -2^63
                           long1(le(uint64_t{1} << 63, 8) + op(0)) +  // 2^63
                           long1(le(0, 8) + op(1)) +                  // 2^64: too wide
                           op(0x8b) + le(2, 4) + le(300, 2) + "l";    // LONG4
  const json v = decoded(pk(body));
  ASSERT_EQ(v.size(), 7u);
  EXPECT_EQ(v[0], 0);
  EXPECT_EQ(v[1], -1);
  EXPECT_EQ(v[2].get<int64_t>(), 1796407438366292474);
  EXPECT_EQ(v[3].get<int64_t>(), INT64_MIN);
  EXPECT_EQ(v[4].get<uint64_t>(), uint64_t{1} << 63);
  EXPECT_EQ(v[5], "<int of 9 bytes>");
  EXPECT_EQ(v[6], 300);
}

TEST(PickleReaderTest, TextAndBytesOpcodes) {
  const std::string body = "(" + op(0x8c) + op(2) + "\xc3\xa9" + str("abc") + op(0x8d) + le(1, 8) +
                           "z" + "U" + op(2) + "py" + "T" + le(1, 4) + "s" + "C" + op(2) +
                           std::string("\0\xff", 2) + "B" + le(1, 4) + "b" + op(0x8e) + le(0, 8) +
                           op(0x96) + le(1, 8) + "a" + str("\xed\xa0\x80") + "l";
  const json v = decoded(pk(body));
  ASSERT_EQ(v.size(), 10u);
  EXPECT_EQ(v[0], "\xc3\xa9");
  EXPECT_EQ(v[1], "abc");
  EXPECT_EQ(v[2], "z");
  EXPECT_EQ(v[3], "py");
  EXPECT_EQ(v[4], "s");
  auto bytes = [](const json& j) {
    return std::vector<uint8_t>(j.get_binary().begin(), j.get_binary().end());
  };
  EXPECT_EQ(bytes(v[5]), (std::vector<uint8_t>{0, 0xff}));
  EXPECT_EQ(bytes(v[6]), (std::vector<uint8_t>{'b'}));
  EXPECT_TRUE(bytes(v[7]).empty());
  EXPECT_EQ(bytes(v[8]), (std::vector<uint8_t>{'a'}));
  EXPECT_EQ(v[9], "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");  // a lone surrogate is not UTF-8
  EXPECT_NO_THROW((void)v.dump());
}

TEST(PickleReaderTest, ContainersFromEveryOpcode) {
  const std::string setitem = "}" + str("d") + K(1) + "s";
  const std::string list = str("list") + "]" + K(1) + "a" + "(" + K(2) + K(3) + "e";
  const std::string tuples = str("tuples") + "(" + ")" + K(1) + op(0x85) + K(1) + K(2) + op(0x86) +
                             K(1) + K(2) + K(3) + op(0x87) + "(" + K(4) + "t" + "l";
  const std::string from_mark =
      str("marked") + "(" + str("x") + "N" + "d" + "(" + K(7) + "l" + op(0x86);
  const std::string sets =
      str("sets") + op(0x8f) + "(" + K(4) + op(0x90) + "(" + K(5) + op(0x91) + op(0x86);
  const json want = json::parse(R"({"d": 1, "list": [1, 2, 3],
                                    "tuples": [[], [1], [1, 2], [1, 2, 3], [4]],
                                    "marked": [{"x": null}, [7]], "sets": [[4], [5]]})");
  EXPECT_EQ(decoded(pk(setitem + "(" + list + tuples + from_mark + sets + "u")), want);
}

TEST(PickleReaderTest, StackOpcodesPopPopMarkAndDup) {
  // POP drops the None, POP_MARK the MARK's frame, DUP copies the 1 that TUPLE2 then takes.
  EXPECT_EQ(decoded(pk("N0" + K(1) + "(" + K(9) + "1" + "2" + op(0x86))), json::parse("[1, 1]"));
  EXPECT_EQ(decoded(pk(K(3) + "(0")), 3);  // POP on an empty frame pops its MARK
}

TEST(PickleReaderTest, MemoSharesOneValueAsPythonDoes) {
  // The list is memoized before its items arrive, as Python's pickler does: the copy fetched
  // later holds them too.
  const std::string body = "]" + put(0) + "(" + K(1) + K(2) + "e" + str("x") + put(1) + "r" +
                           le(300, 4) + get(1) + "j" + le(300, 4) + op(0x87);
  const std::string list_then_refs = "(" + body + get(0) + "l";
  EXPECT_EQ(decoded(pk(list_then_refs)), json::parse(R"([[1, 2], ["x", "x", "x"], [1, 2]])"));
  // Protocol 4: FRAME, and MEMOIZE numbering entries in order.
  const std::string p4 =
      proto(4) + op(0x95) + le(8, 8) + op(0x8c) + op(1) + "a" + op(0x94) + get(0) + op(0x86) + ".";
  EXPECT_EQ(decoded(p4), json::parse(R"(["a", "a"])"));
}

TEST(PickleReaderTest, DictKeysBecomeTextAsJsonDumpsWritesThem) {
  const std::string body =
      "}(" + K(5) + K(1) + "N" + K(2) + op(0x88) + K(3) + K(1) + K(2) + op(0x86) + K(4) + "u";
  EXPECT_EQ(decoded(pk(body)), json::parse(R"({"5": 1, "null": 2, "true": 3, "[1,2]": 4})"));
}

TEST(PickleReaderTest, ObjectsBecomePlaceholdersAndNothingRuns) {
  // OrderedDict([...]) via GLOBAL + REDUCE, then SETITEMS into it; a class via STACK_GLOBAL +
  // NEWOBJ + BUILD; NEWOBJ_EX with its kwargs.
  const std::string od = "ccollections\nOrderedDict\n)R(" + str("k") + K(1) + "u";
  const std::string obj = str("os") + str("system") + op(0x93) + ")" + op(0x81) + "}" + "b";
  const std::string ex = "cpkg\nCls\n)}" + op(0x92);
  const json v = decoded(pk("(" + od + obj + ex + "l"));
  EXPECT_EQ(v, json::parse(R"(["<object collections.OrderedDict>", "<object os.system>",
                               "<object pkg.Cls>"])"));
}

TEST(PickleReaderTest, LooksLikePickleWantsProtoTwoToFive) {
  EXPECT_TRUE(looksLikePickle(proto(2)));
  EXPECT_TRUE(looksLikePickle(proto(5) + "N."));
  EXPECT_FALSE(looksLikePickle(proto(1)));
  EXPECT_FALSE(looksLikePickle(proto(6)));
  EXPECT_FALSE(looksLikePickle("{\"entries\": []}"));
  EXPECT_FALSE(looksLikePickle(op(0x80)));
}

TEST(PickleReaderTest, MalformedInputIsAnError) {
  EXPECT_NE(errorOf("").find("no STOP"), std::string::npos);
  EXPECT_NE(errorOf(proto(6) + "N.").find("protocol 6"), std::string::npos);
  EXPECT_NE(errorOf(pk(op(0x14))).find("unsupported opcode 0x14"), std::string::npos);
  // PERSID, BINPERSID, the protocol 0 text opcodes, INST, OBJ, EXT1, NEXT/READONLY_BUFFER.
  const int unsupported[] = {'P', 'Q', 'I', 'L', 'S', 'V', 'p', 'g', 'i', 'o', 0x82, 0x97, 0x98};
  for (const int code : unsupported)
    EXPECT_NE(errorOf(pk(op(code) + "0\n")).find("unsupported"), std::string::npos);
  EXPECT_NE(errorOf(proto() + ".").find("nothing on the stack"), std::string::npos);
  EXPECT_NE(errorOf(pk("s")).find("underflow"), std::string::npos);
  EXPECT_NE(errorOf(pk("}(" + K(1) + "u")).find("odd item count"), std::string::npos);
  EXPECT_NE(errorOf(pk("(" + K(1) + "d")).find("odd item count"), std::string::npos);
  EXPECT_NE(errorOf(pk("}" + K(1) + "a")).find("wrong type"), std::string::npos);
  EXPECT_NE(errorOf(pk("]" + K(1) + K(1) + "s")).find("wrong type"), std::string::npos);
  EXPECT_NE(errorOf(pk(get(7))).find("never stored"), std::string::npos);
  EXPECT_NE(errorOf(pk(put(0) + "N")).find("empty stack"), std::string::npos);
  EXPECT_NE(errorOf(pk("N1")).find("without a MARK"), std::string::npos);
  EXPECT_NE(errorOf(pk("Ne")).find("no MARK"), std::string::npos);
  EXPECT_NE(errorOf(pk(op(0x8b) + le(0xFFFFFFFF, 4))).find("negative"), std::string::npos);
  EXPECT_NE(errorOf(pk("T" + le(0xFFFFFFFF, 4))).find("negative"), std::string::npos);
  EXPECT_NE(errorOf(pk("c" + std::string(300, 'm') + "\nx\n")).find("GLOBAL"), std::string::npos);
  EXPECT_NE(errorOf(pk(K(1) + "N" + op(0x93))).find("two strs"), std::string::npos);
  EXPECT_NE(errorOf(pk("R")).find("underflow"), std::string::npos);
  // A length near 2^64 must not wrap or allocate.
  EXPECT_NE(errorOf(pk(op(0x8d) + le(~uint64_t{0}, 8))).find("truncated"), std::string::npos);
  EXPECT_NE(errorOf(proto(4) + op(0x95) + le(1000, 8) + "N.").find("frame"), std::string::npos);
}

TEST(PickleReaderTest, EveryTruncationIsAnError) {
  const std::string whole = pk("}" + put(0) + "(" + str("entries") + put(1) + "]" + put(2) + "(}(" +
                               get(1) + K(6) + "ue" + str("rank") + "J" + le(3, 4) + op(0x8a) +
                               op(8) + le(1796407438366292474, 8) + op(0x86) + "u");
  ASSERT_TRUE(decodePickle(whole).isOk());
  for (size_t n = 0; n + 1 < whole.size(); ++n) {
    SCOPED_TRACE(n);
    EXPECT_FALSE(decodePickle(whole.substr(0, n)).isOk());
  }
}

TEST(PickleReaderTest, DepthSizeAndMemoLimitsHold) {
  std::string marks;
  for (int i = 0; i < 65; ++i) marks += "(";
  EXPECT_NE(errorOf(pk(marks + "N")).find("open MARKs"), std::string::npos);
  std::string nested;  // 100 lists, each appended into the one below it
  for (int i = 0; i < 100; ++i) nested += "]";
  for (int i = 0; i < 99; ++i) nested += "a";
  EXPECT_NE(errorOf(pk(nested)).find("nested deeper"), std::string::npos);
  // A list that holds itself: infinitely deep, stopped by the same limit.
  EXPECT_NE(errorOf(pk("]" + put(0) + get(0) + "a")).find("nested deeper"), std::string::npos);

  PickleOptions small;
  small.limits.max_values = 4;
  EXPECT_NE(errorOf(pk("(NNNNl"), small).find("more than 4 values"), std::string::npos);
  small.limits.max_memo = 2;
  EXPECT_NE(errorOf(pk("N" + put(0) + put(1) + put(2)), small).find("memo"), std::string::npos);
  small.limits.max_input_bytes = 3;
  EXPECT_FALSE(decodePickle(pk("N"), small).isOk());
}

TEST(PickleReaderTest, SharedReferencesCannotExpandWithoutBound) {
  // Each level is a tuple of the level below, twice: 2^40 values once copied out.
  std::string body = "N" + put(0);
  for (int i = 1; i <= 40; ++i) body += get(i - 1) + get(i - 1) + op(0x86) + put(i);
  PickleOptions small;
  small.limits.max_output_values = 100000;
  EXPECT_NE(errorOf(pk(body), small).find("expands to more than"), std::string::npos);
  small.limits.max_output_bytes = 1000;
  const std::string text = str(std::string(600, 'x')) + put(0) + get(0) + op(0x86);
  EXPECT_NE(errorOf(pk(text), small).find("bytes of text"), std::string::npos);
}

TEST(PickleReaderTest, RepairsStrsWhoseLengthPrefixWasNotEdited) {
  // "/home/alice/x" became "/home/bob/x" after pickling: the prefix still says 14 bytes, and
  // read as stated the str swallows its BINPUT and the next opcode.
  const std::string shorter = pk("(X" + le(14, 4) + "/home/bob/x" + put(0) + get(0) + "l");
  EXPECT_NE(errorOf(shorter).find("unsupported opcode 0x00"), std::string::npos);
  PickleOptions repair;
  repair.repair_string_lengths = true;
  size_t repaired = 0;
  auto r = decodePickle(shorter, repair, &repaired);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_EQ(*r, json::parse(R"(["/home/bob/x", "/home/bob/x"])"));
  EXPECT_EQ(repaired, 1u);
  // Lengthened text: the prefix says fewer bytes than the str holds.
  const std::string longer = pk("(X" + le(5, 4) + "/home/carol" + put(0) + "l");
  EXPECT_FALSE(decodePickle(longer).isOk());
  r = decodePickle(longer, repair);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_EQ(*r, json::parse(R"(["/home/carol"])"));
  // An intact pickle needs no repair.
  r = decodePickle(pk(str("ok") + put(0)), repair, &repaired);
  ASSERT_TRUE(r.isOk());
  EXPECT_EQ(repaired, 0u);
}

}  // namespace
}  // namespace ccscope::diagnostics
