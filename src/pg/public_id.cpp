// Public IDs in SQL (issues 40 and 45, doc/public-ids.md): snowflake_to_public
// and snowflake_from_public, the tweak taken in UTF-8 whatever the database's
// encoding, and their errors. The keys are public_id_keys.cpp's: a statement's
// rows, and its parallel workers', use one key set.
#include "../core/public_id.hpp"
#include "boundary.hpp"
#include "public_id_keys.hpp"
#include "text.hpp"

namespace snowflake::pg {
namespace {

// The tweak argument's bytes (none without the argument), in UTF-8.
struct Tweak {
  const uint8_t* bytes = nullptr;
  std::size_t length = 0;
};

bool is_ascii(const char* bytes, int length) {
  for (int i = 0; i < length; i++)
    if (static_cast<unsigned char>(bytes[i]) >= 0x80) return false;
  return true;
}

// A tweak with other than ASCII in a database not in UTF-8: converted, so
// that the same tweak gives the same bytes in every database. SQL_ASCII says
// nothing of what its bytes mean: they must be UTF-8 already. Every other
// server encoding converts to UTF-8 but MULE_INTERNAL (and a character
// UTF-8 lacks fails as PostgreSQL's conversions fail).
Tweak tweak_in_utf8(const char* bytes, int length) {
  const int encoding = GetDatabaseEncoding();
  if (encoding == PG_SQL_ASCII) {
    const int valid = pg_encoding_verifymbstr(PG_UTF8, bytes, length);
    if (valid < length) {
      ereport(ERROR,
              (errcode(ERRCODE_CHARACTER_NOT_IN_REPERTOIRE),
               errmsg("the tweak of a public ID is not valid UTF-8"),
               errdetail("A tweak is taken as UTF-8, and this database's encoding, SQL_ASCII, "
                         "says nothing of what its bytes are: byte %d of the tweak (0x%02x) is "
                         "not valid UTF-8.",
                         valid + 1, static_cast<unsigned char>(bytes[valid])),
               errhint("Pass the tweak in UTF-8, or in ASCII alone (doc/public-ids.md, "
                       "\"Tweaks\").")));
    }
    return {reinterpret_cast<const uint8_t*>(bytes), static_cast<std::size_t>(length)};
  }
  static bool converts = false;  // the database's encoding has a conversion to UTF-8
  if (unlikely(!converts)) {
    if (!OidIsValid(FindDefaultConversionProc(encoding, PG_UTF8))) {
      ereport(ERROR,
              (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
               errmsg("the tweak of a public ID cannot be converted to UTF-8"),
               errdetail("A tweak is taken as UTF-8, and PostgreSQL has no conversion from this "
                         "database's encoding, %s, to UTF-8.",
                         GetDatabaseEncodingName()),
               errhint("Pass a tweak in ASCII alone (doc/public-ids.md, \"Tweaks\").")));
    }
    converts = true;
  }
  const char* converted = pg_server_to_any(bytes, length, PG_UTF8);
  if (converted == bytes)
    return {reinterpret_cast<const uint8_t*>(bytes), static_cast<std::size_t>(length)};
  return {reinterpret_cast<const uint8_t*>(converted), strlen(converted)};
}

Tweak tweak_argument(FunctionCallInfo fcinfo, int argno) {
  if (PG_NARGS() <= argno) return {};
  const text* tweak = PG_GETARG_TEXT_PP(argno);
  const char* bytes = VARDATA_ANY(tweak);
  const int length = VARSIZE_ANY_EXHDR(tweak);
  if (likely(GetDatabaseEncoding() == PG_UTF8) || is_ascii(bytes, length))
    return {reinterpret_cast<const uint8_t*>(bytes), static_cast<std::size_t>(length)};
  return tweak_in_utf8(bytes, length);
}

void require_keys(const public_id::KeyRing& ring) {
  if (likely(!ring.empty())) return;
  ereport(ERROR,
          (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
           errmsg("no key for public IDs is configured"),
           errdetail("snowflake.public_id_keys_file is empty, or the file it names could not be "
                     "loaded (the server log says why)."),
           errhint("A superuser sets snowflake.public_id_keys_file in postgresql.conf to a file of "
                   "keys (doc/public-ids.md), then reloads.")));
}

void report_cipher_failure(ff1::Status status) {
  ereport(ERROR, (errcode(ERRCODE_EXTERNAL_ROUTINE_EXCEPTION),
                  errmsg("FF1 failed for a public ID: %s", ff1::status_name(status)),
                  errhint("OpenSSL's libcrypto refused; the server log may say why.")));
}

void require_decoded(const public_id::KeyRing& ring, const public_id::DecodeResult& result,
                     const char* text, int length) {
  if (result.status == public_id::DecodeStatus::kOk) return;
  const char* shown = quoted_text(text, static_cast<std::size_t>(length));
  constexpr char kPassHint[] =
      "Pass a text that snowflake_to_public() returned: a key version and 13 Crockford base32 "
      "digits.";
  switch (result.status) {
    case public_id::DecodeStatus::kOk:
    case public_id::DecodeStatus::kNoKey:  // require_keys() came first
      return;
    case public_id::DecodeStatus::kInvalidCharacter:
      refuse_base32_character("invalid public ID", shown, text, result.position);
    case public_id::DecodeStatus::kWrongLength:
      ereport(
          ERROR,
          (errcode(ERRCODE_INVALID_TEXT_REPRESENTATION), errmsg("invalid public ID: \"%s\"", shown),
           errdetail("It has %d characters; a public ID has %d.",
                     pg_mbstrlen_with_len(text, length), static_cast<int>(public_id::kWidth)),
           errhint("%s", kPassHint)));
      break;
    case public_id::DecodeStatus::kUnknownVersion: {
      char versions[3 * public_id::kVersions];
      ring.describe_versions(versions, sizeof(versions));
      ereport(
          ERROR,
          (errcode(ERRCODE_INVALID_TEXT_REPRESENTATION), errmsg("invalid public ID: \"%s\"", shown),
           errdetail("Its first character, \"%c\", names the version of its key; the keys "
                     "configured are of versions %s.",
                     base32::digit(result.version), versions),
           errhint("A text made under a key that has since left snowflake.public_id_keys_file "
                   "no longer decodes: keep a key in the file while its texts are in use.")));
      break;
    }
    case public_id::DecodeStatus::kOutOfRange:
      ereport(
          ERROR,
          (errcode(ERRCODE_INVALID_TEXT_REPRESENTATION), errmsg("invalid public ID: \"%s\"", shown),
           errdetail("Its second character is above 7: the 13 digits after the version hold "
                     "63 bits."),
           errhint("%s", kPassHint)));
      break;
    case public_id::DecodeStatus::kCipherFailure:
      report_cipher_failure(result.cipher);
      break;
  }
}

}  // namespace

}  // namespace snowflake::pg

using namespace snowflake::pg;
namespace public_id = snowflake::public_id;

SNOWFLAKE_FUNCTION(snowflake_to_public) {
  const int64_t id = PG_GETARG_INT64(0);
  if (id < 0) {
    ereport(ERROR,
            (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("snowflake ID must not be negative"),
             errdetail("The ID given is %lld; snowflake IDs are positive bigint values (the sign "
                       "bit is always 0).",
                       static_cast<long long>(id)),
             errhint("Pass an ID returned by snowflake_nextval().")));
  }
  const Tweak tweak = tweak_argument(fcinfo, 1);
  const public_id::KeyRing& ring = public_id_keys_for_call();
  require_keys(ring);
  char digits[public_id::kWidth];
  const snowflake::ff1::Status status =
      public_id::encode(ring, id, tweak.bytes, tweak.length, digits);
  if (status != snowflake::ff1::Status::kOk) report_cipher_failure(status);
  PG_RETURN_TEXT_P(cstring_to_text_with_len(digits, sizeof(digits)));
}

SNOWFLAKE_FUNCTION(snowflake_from_public) {
  const text* input = PG_GETARG_TEXT_PP(0);
  const char* characters = VARDATA_ANY(input);
  const int length = VARSIZE_ANY_EXHDR(input);
  const Tweak tweak = tweak_argument(fcinfo, 1);
  const public_id::KeyRing& ring = public_id_keys_for_call();
  require_keys(ring);
  const public_id::DecodeResult result = public_id::decode(
      ring, characters, static_cast<std::size_t>(length), tweak.bytes, tweak.length);
  require_decoded(ring, result, characters, length);
  PG_RETURN_INT64(result.id);
}
