// The upgrade hook: a persistent class restored across a change of its fields
// (class evolution, docs/FORMAT.md "Class evolution") re-establishes its
// invariants from the old version's values.
using System;
using System.Collections.Generic;

namespace SPersistence
{
	/// <summary>
	/// Implemented by an [SPersistent] class whose fields changed from one version
	/// of the program to the next. After a warm restart whose snapshot the old
	/// version wrote, <see cref="OnRestored"/> is called on every restored object
	/// of such a class, once the whole state is restored and before the first
	/// call into <see cref="SPC"/> returns (on that call's thread, in the order
	/// the objects were restored), with the old values of the fields that did not
	/// restore as they were: removed, renamed or widened. Objects of a class that
	/// did not change are not called. An exception thrown by one call is thrown
	/// from that SPC call, as an <see cref="SPersistenceException"/>, after every
	/// other object's call ran.
	/// </summary>
	public interface ISPersistentUpgrade
	{
		void OnRestored (SPUpgradeContext context);
	}

	/// <summary>What the old version of a restored object held that its class no longer holds as it was.</summary>
	public sealed class SPUpgradeContext
	{
		readonly Dictionary<string, object> old = new Dictionary<string, object> ();

		internal SPUpgradeContext (string formerClassName, string changes, string [] names, object [] values)
		{
			FormerClassName = formerClassName;
			Changes = changes;
			for (int i = 0; i < names.Length; i++)
				old [names [i]] = values [i];
		}

		/// <summary>The class's name in the snapshot (its former name if it was renamed).</summary>
		public string FormerClassName { get; private set; }

		/// <summary>What changed, as spmono says it on stderr ("field 'Level' int -> long; ...").</summary>
		public string Changes { get; private set; }

		/// <summary>The old fields whose values are here, by their names in the old version ("Pos.X" for a struct's field).</summary>
		public ICollection<string> FieldNames {
			get { return old.Keys; }
		}

		/// <summary>Did the old version have field <paramref name="name"/> (removed, renamed or widened since)?</summary>
		public bool Has (string name)
		{
			return old.ContainsKey (name);
		}

		/// <summary>
		/// The old value of field <paramref name="name"/>, of its old type (an int
		/// for a field that was an int and is a long now); for a removed reference
		/// field, the object it referred to (restored, though nothing refers to it
		/// now) or null.
		/// </summary>
		public object Old (string name)
		{
			object v;
			if (!old.TryGetValue (name, out v))
				throw new KeyNotFoundException ("the snapshot's " + FormerClassName + " has no changed field '" + name +
								"'; it has: " + string.Join (", ", FieldNames));
			return v;
		}

		/// <summary><see cref="Old(string)"/>, converted to <typeparamref name="T"/> (Convert.ChangeType for values).</summary>
		public T Old<T> (string name)
		{
			object v = Old (name);
			if (v == null || v is T)
				return (T)v;
			return (T)Convert.ChangeType (v, typeof (T));
		}
	}
}
